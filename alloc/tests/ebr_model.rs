//! A model of the device EBR protocol (`gpuds/alloc/ebr.cuh`) on the CPU: blocks are state
//! machines whose steps (read the epoch, announce, scan, read a cell, touch a unit,
//! retire, leave) a random scheduler interleaves. Every schedule must keep the safety
//! property: no block touches a unit after it went back to the allocator. The same model
//! with a reclamation delay one epoch shorter, or without the check of the announcement
//! on enter(), must find a violation, which shows that the schedules reach the dangerous
//! interleavings.

const BAGS: usize = 3;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Live,
    Retired,
    Freed,
}

#[derive(Clone, Copy)]
enum Phase {
    Quiescent,
    ReadEpoch(u32),
    Validate(u32),
    Reannounce(u32),
    Active,
    Holding(usize),
}

struct Block {
    epoch: u32,
    bags: [Vec<usize>; BAGS],
    phase: Phase,
    scan_pos: usize,
    scan_epoch: u32,
}

struct World {
    epoch: u32,
    announce: Vec<(u32, bool)>,
    blocks: Vec<Block>,
    cells: Vec<usize>,
    units: Vec<Unit>,
    /// Bags of epoch t are freed when the block sees t + delay.
    delay: u32,
    /// Whether enter() checks its announcement (the device does).
    validate: bool,
    scan_width: usize,
}

impl World {
    fn new(blocks: usize, cells: usize, delay: u32, validate: bool) -> Self {
        Self {
            epoch: 0,
            announce: vec![(0, false); blocks],
            blocks: (0..blocks)
                .map(|_| Block {
                    epoch: 0,
                    bags: Default::default(),
                    phase: Phase::Quiescent,
                    scan_pos: 0,
                    scan_epoch: u32::MAX,
                })
                .collect(),
            cells: (0..cells).collect(),
            units: vec![Unit::Live; cells],
            delay,
            validate,
            scan_width: 2,
        }
    }

    /// One step of block b; Err when a freed unit is touched.
    fn step(&mut self, b: usize, rng: &mut Rng) -> Result<(), String> {
        match self.blocks[b].phase {
            Phase::Quiescent => self.blocks[b].phase = Phase::ReadEpoch(self.epoch),
            Phase::ReadEpoch(e) => {
                self.announce[b] = (e, true);
                self.blocks[b].phase = Phase::Validate(e);
            }
            // The announcement is checked against the epoch read again: a block that
            // announced a stale epoch announces the current one (at most once: while it
            // announces the stale one, the epoch cannot advance).
            Phase::Validate(e) => {
                if self.epoch == e || !self.validate {
                    self.entered(b, e);
                } else {
                    self.blocks[b].phase = Phase::Reannounce(self.epoch);
                }
            }
            Phase::Reannounce(e) => {
                self.announce[b] = (e, true);
                self.entered(b, e);
            }
            Phase::Active => {
                let c = rng.below(self.cells.len() as u64) as usize;
                if rng.below(2) == 0 {
                    self.blocks[b].phase = Phase::Holding(self.cells[c]);
                } else {
                    let fresh = self.units.len();
                    self.units.push(Unit::Live);
                    let old = std::mem::replace(&mut self.cells[c], fresh);
                    self.units[old] = Unit::Retired;
                    let block = &mut self.blocks[b];
                    block.bags[(block.epoch % 3) as usize].push(old);
                    self.leave(b);
                }
            }
            Phase::Holding(u) => {
                if self.units[u] == Unit::Freed {
                    return Err(format!("block {b} touched unit {u} after it was freed"));
                }
                if rng.below(3) == 0 {
                    self.leave(b);
                }
            }
        }
        Ok(())
    }

    /// The rest of enter() once the block's announcement of `e` stands: hand back old
    /// bags, then one step of the incremental scan.
    fn entered(&mut self, b: usize, e: u32) {
        let block = &mut self.blocks[b];
        // The bags hold the epochs epoch-2 ..= epoch; the one `back` epochs behind is
        // handed back once e is `delay` epochs past it.
        let delta = e.wrapping_sub(block.epoch);
        for back in 0..BAGS as u32 {
            if delta != 0 && delta + back >= self.delay {
                let bag = (block.epoch % 3 + 3 - back) % 3;
                for u in block.bags[bag as usize].drain(..) {
                    self.units[u] = Unit::Freed;
                }
            }
        }
        block.epoch = e;
        if block.scan_epoch != e {
            block.scan_epoch = e;
            block.scan_pos = 0;
        }
        let end = (block.scan_pos + self.scan_width).min(self.announce.len());
        let fine = self.announce[block.scan_pos..end]
            .iter()
            .all(|&(ae, active)| !active || ae == block.scan_epoch);
        if fine {
            block.scan_pos = end;
            if block.scan_pos >= self.announce.len() {
                if self.epoch == block.scan_epoch {
                    self.epoch += 1;
                }
                block.scan_pos = 0;
            }
        }
        block.phase = Phase::Active;
    }

    fn leave(&mut self, b: usize) {
        self.announce[b].1 = false;
        self.blocks[b].phase = Phase::Quiescent;
    }
}

/// Runs `schedules` random schedules; returns the first violation.
fn explore(delay: u32, validate: bool, schedules: u64) -> Result<u32, String> {
    let mut max_epoch = 0;
    for seed in 1..=schedules {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let blocks = 2 + rng.below(3) as usize;
        let mut world = World::new(blocks, 2, delay, validate);
        for _ in 0..400 {
            // Skewed scheduling: a block often runs several steps in a row.
            let b = rng.below(blocks as u64) as usize;
            for _ in 0..1 + rng.below(3) {
                world
                    .step(b, &mut rng)
                    .map_err(|e| format!("seed {seed}: {e}"))?;
            }
        }
        max_epoch = max_epoch.max(world.epoch);
    }
    Ok(max_epoch)
}

#[test]
fn no_schedule_touches_a_freed_unit() {
    let max_epoch = explore(3, true, 100_000).unwrap();
    assert!(max_epoch >= 10, "the epoch hardly advanced ({max_epoch})");
}

#[test]
fn a_delay_one_epoch_shorter_is_caught() {
    assert!(explore(2, true, 20_000).is_err());
}

#[test]
fn entering_without_checking_the_announcement_is_caught() {
    assert!(explore(3, false, 20_000).is_err());
}
