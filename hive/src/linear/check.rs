//! Host-side reading of a LinearProbeMap's slots: decoding, statistics and validation.

use gpuds_core::{DeviceKey, DeviceValue};

use super::config::{Deletion, LinearConfig};
use crate::error::{Error, Result};
use crate::probe::{Geometry, ProbeSequence};

/// Occupancy and probe lengths of a [`LinearProbeMap`](super::LinearProbeMap).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearStats {
    /// Slots.
    pub capacity: u64,
    /// Live pairs.
    pub len: u64,
    /// Tombstones: keys whose value was erased, and erased keys.
    pub tombstones: u64,
    /// Occupied slots (live pairs and tombstones) per slot: what probes see.
    pub load_factor: f64,
    /// Mean probe length of the live keys: windows passed before the key's own (0 when
    /// a key sits in its start window).
    pub mean_probe: f64,
    /// Longest probe length of a live key.
    pub max_probe: u64,
    /// Device memory of the slots, in bytes.
    pub bytes: u64,
}

/// What one slot holds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Slot<K, V> {
    Empty,
    Erased,
    /// A key whose value is the empty value (value tombstone, or an insert in flight).
    Dead(K),
    Live(K, V),
}

impl<K: Copy, V: Copy> Slot<K, V> {
    pub fn live(&self) -> Option<(K, V)> {
        match *self {
            Slot::Live(k, v) => Some((k, v)),
            _ => None,
        }
    }

    fn key(&self) -> Option<K> {
        match *self {
            Slot::Dead(k) | Slot::Live(k, _) => Some(k),
            _ => None,
        }
    }
}

/// The slots of a table image, in slot order.
pub(crate) fn decode<K: DeviceKey, V: DeviceValue>(
    words: &[u64],
) -> impl Iterator<Item = (usize, Slot<K, V>)> + '_ {
    let packed = std::mem::size_of::<K>() == 4 && std::mem::size_of::<V>() == 4;
    let per_slot = if packed { 1 } else { 2 };
    let (empty_key, empty_value) = (K::MAX, V::from_u64(u64::MAX));
    let erased_key = K::from_u64(K::MAX.to_u64() - 1);
    words.chunks_exact(per_slot).enumerate().map(move |(i, w)| {
        let (k, v) = if packed {
            (K::from_u64(w[0] & 0xffff_ffff), V::from_u64(w[0] >> 32))
        } else {
            (K::from_u64(w[0]), V::from_u64(w[1]))
        };
        let slot = if k == empty_key {
            Slot::Empty
        } else if k == erased_key {
            Slot::Erased
        } else if v.to_u64() == empty_value.to_u64() {
            Slot::Dead(k)
        } else {
            Slot::Live(k, v)
        };
        (i, slot)
    })
}

/// Checks a table image: empty and erased slots hold the empty value; no erased slot
/// under value tombstones; every key is held once and is reachable: no window before
/// its own on its probe sequence, and no lane before its own in its window, is empty.
pub(crate) fn validate<K: DeviceKey, V: DeviceValue>(
    words: &[u64],
    geometry: Geometry,
    config: &LinearConfig,
) -> Result<()> {
    let width = config.group_width.get() as usize;
    let slots: Vec<Slot<K, V>> = decode::<K, V>(words).map(|(_, s)| s).collect();
    if slots.len() as u64 != geometry.slots(config.group_width) {
        return Err(Error::Invalid(format!(
            "{} slots for a geometry of {} windows of {width}",
            slots.len(),
            geometry.windows
        )));
    }
    let packed = std::mem::size_of::<K>() == 4 && std::mem::size_of::<V>() == 4;
    let per_slot = if packed { 1 } else { 2 };
    for (i, slot) in slots.iter().enumerate() {
        match *slot {
            Slot::Empty | Slot::Erased => {
                let value = if packed {
                    words[i] >> 32
                } else {
                    words[i * per_slot + 1]
                };
                // Only the value's own bytes count (a 4-byte value in a 16-byte slot
                // has padding beside it).
                let value = V::from_u64(value).to_u64();
                if value != V::from_u64(u64::MAX).to_u64() {
                    return Err(Error::Invalid(format!(
                        "slot {i} is {slot:?} but holds value {value:#x}"
                    )));
                }
                if matches!(slot, Slot::Erased) && config.deletion == Deletion::ValueTombstones {
                    return Err(Error::Invalid(format!(
                        "slot {i} holds an erased key in a table with value tombstones"
                    )));
                }
            }
            Slot::Dead(key) | Slot::Live(key, _) => {
                // Two copies of a key lie on the key's one probe sequence, so the later
                // copy meets the earlier one on its way from the start window.
                let twice = |at: usize| {
                    Error::Invalid(format!(
                        "key {:#x} is held by slots {at} and {i}",
                        key.to_u64()
                    ))
                };
                let own = (i / width) as u32;
                let mut seq = ProbeSequence::new(key, geometry, config.probing);
                let mut steps = 0u64;
                while seq.window() != own {
                    let start = seq.window() as usize * width;
                    let window = &slots[start..start + width];
                    if let Some(lane) = window.iter().position(|s| s.key() == Some(key)) {
                        return Err(twice(start + lane));
                    }
                    if let Some(lane) = window.iter().position(|s| matches!(s, Slot::Empty)) {
                        return Err(Error::Invalid(format!(
                            "key {:#x} in slot {i} is unreachable: slot {} on its probe \
                             sequence is empty",
                            key.to_u64(),
                            start + lane
                        )));
                    }
                    seq.next();
                    steps += 1;
                    if steps > u64::from(geometry.windows) {
                        return Err(Error::Invalid(format!(
                            "key {:#x} in slot {i} is not on its own probe sequence",
                            key.to_u64()
                        )));
                    }
                }
                let start = own as usize * width;
                // Inserts claim the first free lane they saw and no slot ever becomes
                // empty again, so nothing sits behind an empty lane of its window.
                if slots[start..i].iter().any(|s| matches!(s, Slot::Empty)) {
                    return Err(Error::Invalid(format!(
                        "key {:#x} in slot {i} sits behind an empty slot of its window",
                        key.to_u64()
                    )));
                }
                if let Some(lane) = slots[start..i].iter().position(|s| s.key() == Some(key)) {
                    return Err(twice(start + lane));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{GroupWidth, Probing};

    fn image(slots: &[(u32, u32)]) -> Vec<u64> {
        slots
            .iter()
            .map(|&(k, v)| (u64::from(v) << 32) | u64::from(k))
            .collect()
    }

    fn place(capacity: usize, keys: &[(u32, u32)], config: &LinearConfig) -> Vec<(u32, u32)> {
        let geometry = Geometry::new(capacity as u64, config.group_width, config.probing).unwrap();
        let mut slots = vec![(u32::MAX, u32::MAX); capacity];
        for &(k, v) in keys {
            let mut seq = ProbeSequence::new(k, geometry, config.probing);
            'probe: loop {
                let w = config.group_width.get() as usize;
                for lane in 0..w {
                    let i = seq.window() as usize * w + lane;
                    if slots[i].0 == u32::MAX {
                        slots[i] = (k, v);
                        break 'probe;
                    }
                }
                seq.next();
            }
        }
        slots
    }

    #[test]
    fn a_well_built_image_passes() {
        for (width, probing) in [(1, Probing::Linear), (4, Probing::DoubleHashing)] {
            let config = LinearConfig {
                capacity: 64,
                group_width: GroupWidth::new(width).unwrap(),
                probing,
                ..LinearConfig::default()
            };
            let pairs: Vec<(u32, u32)> = (0..50).map(|k| (k, k + 1)).collect();
            let slots = place(64, &pairs, &config);
            let g = Geometry::new(64, config.group_width, probing).unwrap();
            validate::<u32, u32>(&image(&slots), g, &config).unwrap();
            let live: Vec<_> = decode::<u32, u32>(&image(&slots))
                .filter_map(|(_, s)| s.live())
                .collect();
            assert_eq!(live.len(), 50);
        }
    }

    #[test]
    fn broken_images_are_caught() {
        let config = LinearConfig {
            capacity: 64,
            ..LinearConfig::default()
        };
        let g = Geometry::new(64, config.group_width, config.probing).unwrap();
        let pairs: Vec<(u32, u32)> = (0..40).map(|k| (k, k)).collect();
        let slots = place(64, &pairs, &config);
        // A duplicate key.
        let mut dup = slots.clone();
        let free = dup.iter().position(|s| s.0 == u32::MAX).unwrap();
        dup[free] = (7, 7);
        let err = validate::<u32, u32>(&image(&dup), g, &config).unwrap_err();
        assert!(err.to_string().contains("0x7"), "{err}");
        // A hole on some key's probe path: find a key not in its start window.
        let moved = (0..64)
            .find(|&i| {
                let k = slots[i].0;
                k != u32::MAX && ProbeSequence::new(k, g, config.probing).window() as usize != i
            })
            .expect("some key was displaced");
        let start = ProbeSequence::new(slots[moved].0, g, config.probing).window() as usize;
        let mut hole = slots.clone();
        hole[start] = (u32::MAX, u32::MAX);
        assert!(validate::<u32, u32>(&image(&hole), g, &config).is_err());
        // An erased key under value tombstones.
        let mut erased = slots;
        erased[moved] = (u32::MAX - 1, u32::MAX);
        assert!(validate::<u32, u32>(&image(&erased), g, &config).is_err());
    }
}
