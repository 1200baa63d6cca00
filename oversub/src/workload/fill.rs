//! Filling a long key vector on all cores, block by block.

use std::thread;

/// Below this many elements per thread, splitting the work costs more than it saves.
const MIN_CHUNK: usize = 1 << 16;

/// `n` values laid out as consecutive blocks starting at `starts` (ascending, `starts[0]
/// == 0`, empty blocks allowed): `make(i)` prepares block `i` once per thread that meets
/// it, `value(&state, offset)` gives the element `offset` places into the block. The
/// work is split into contiguous chunks, one scoped thread each.
pub(crate) fn fill_blocks<S>(
    n: usize,
    starts: &[usize],
    make: impl Fn(usize) -> S + Sync,
    value: impl Fn(&S, usize) -> u32 + Sync,
) -> Vec<u32> {
    let mut out = vec![0u32; n];
    if n == 0 {
        return out;
    }
    let threads = thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(threads).max(MIN_CHUNK);
    let fill_chunk = |first: usize, slots: &mut [u32]| {
        // The block holding `first`: the last one starting at or before it.
        let mut block = starts.partition_point(|&s| s <= first) - 1;
        let mut state = make(block);
        for (j, slot) in (first..).zip(slots.iter_mut()) {
            if starts.get(block + 1).is_some_and(|&next| next <= j) {
                block = starts.partition_point(|&s| s <= j) - 1;
                state = make(block);
            }
            *slot = value(&state, j - starts[block]);
        }
    };
    thread::scope(|scope| {
        for (i, slots) in out.chunks_mut(chunk).enumerate() {
            let fill_chunk = &fill_chunk;
            scope.spawn(move || fill_chunk(i * chunk, slots));
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_see_their_offsets_across_chunk_edges() {
        // Blocks of uneven length, some empty, crossing the chunk boundaries.
        let starts = [0, 5, 5, 70_000, 200_001];
        let n = 300_000;
        let out = fill_blocks(
            n,
            &starts,
            |b| b as u32 * 1_000_000,
            |&base, off| base + off as u32,
        );
        for (j, &v) in out.iter().enumerate() {
            let b = starts.partition_point(|&s| s <= j) - 1;
            assert_eq!(
                v,
                b as u32 * 1_000_000 + (j - starts[b]) as u32,
                "position {j}"
            );
        }
        assert!(fill_blocks(0, &[0], |_| (), |_, _| 1).is_empty());
    }
}
