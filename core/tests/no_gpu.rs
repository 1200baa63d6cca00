//! Opening a device where there may be none: an error, never a panic.

use gpuds_core::{Error, Gpu};

#[test]
fn opening_a_device_never_panics() {
    match Gpu::new(0) {
        Ok(gpu) => assert!(gpu.info().sm_count > 0),
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) => {
            // The message tells the user what is missing.
            assert!(!e.to_string().is_empty());
            println!("no device here: {e}");
        }
        // A stub or mismatched driver fails in the driver itself: still an error.
        Err(e) => println!("device 0 cannot be opened: {e}"),
    }
}

#[test]
fn device_count_is_an_answer_or_no_driver() {
    match Gpu::device_count() {
        Ok(_) | Err(Error::NoDriver) => {}
        Err(e) => println!("devices cannot be counted: {e}"),
    }
}
