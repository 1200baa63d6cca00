//! The host walk of skip lists: every pair in order, and `validate` (ordering, ranges,
//! index entries, levels, counts, node ownership, free lists, the auxiliary list).

use std::collections::HashMap;

use super::layout::{
    key_of, val_of, ListDesc, DEAD, FREED, HEAD, HIGH_SLOT, INDEX_MASK, KEY_TOP, LEVEL_MASK,
    MAX_LEVELS, META_SLOT, NIL, NODE_KEYS, NODE_SLOTS, POOL_SHIFT, UNSORTED,
};
use super::lists::Lists;
use crate::error::{Error, Result};

/// A host copy of every pool's nodes.
pub(crate) struct Snapshot {
    pools: Vec<Vec<u64>>,
}

impl Snapshot {
    pub fn of(lists: &Lists) -> Result<Self> {
        let mut pools = Vec::with_capacity(lists.pools.len());
        for (p, d) in lists.pools.iter().zip(&lists.host_pools) {
            let bytes = u64::from(d.bump) * NODE_SLOTS as u64 * 8;
            pools.push(if bytes == 0 {
                Vec::new()
            } else {
                p.words(bytes)?
            });
        }
        Ok(Self { pools })
    }

    fn node(&self, first_pool: u32, r: u32) -> Result<&[u64]> {
        let p = (first_pool + (r >> POOL_SHIFT)) as usize;
        let i = (r & INDEX_MASK) as usize * NODE_SLOTS;
        self.pools
            .get(p)
            .and_then(|w| w.get(i..i + NODE_SLOTS))
            .ok_or_else(|| Error::Invalid(format!("node {r:#x} is outside its pool")))
    }
}

fn bad(msg: String) -> Error {
    Error::Invalid(msg)
}

/// The live pairs of one list in key order (a walk of its data layer).
pub(crate) fn pairs(snap: &Snapshot, d: &ListDesc) -> Result<Vec<(u32, u32)>> {
    let mut out = Vec::new();
    let mut n = d.heads[0];
    let mut steps = 0usize;
    while n != NIL {
        let node = snap.node(d.first_pool, n)?;
        let meta = val_of(node[META_SLOT]);
        if meta & DEAD == 0 {
            let mut keys: Vec<(u32, u32)> = node[..NODE_KEYS]
                .iter()
                .filter(|&&s| key_of(s) != NIL)
                .map(|&s| (key_of(s), val_of(s)))
                .collect();
            keys.sort_unstable();
            out.extend(keys);
        }
        n = val_of(node[HIGH_SLOT]);
        steps += 1;
        if steps > snap.pools.iter().map(Vec::len).sum::<usize>() {
            return Err(bad("a layer's next links form a cycle".into()));
        }
    }
    Ok(out)
}

/// Checks one list; `range` is its key range (inclusive), `seen` collects every node
/// reached (pool-absolute) to check ownership across lists.
fn check_list(
    snap: &Snapshot,
    d: &ListDesc,
    which: &str,
    range: (u32, u32),
    seen: &mut HashMap<(u32, u32), ()>,
) -> Result<()> {
    if d.heads[0] == NIL {
        if d.count != 0 {
            return Err(bad(format!(
                "{which} has no head but counts {} keys",
                d.count
            )));
        }
        return Ok(());
    }
    // (prev high, high) of every live node of the layer below, by reference.
    let mut below: HashMap<u32, (Option<u32>, u32)> = HashMap::new();
    for level in 0..MAX_LEVELS {
        let head = d.heads[level];
        if head == NIL {
            if level as u32 <= d.height {
                return Err(bad(format!(
                    "{which}: layer {level} has no head below the height {}",
                    d.height
                )));
            }
            for l in level..MAX_LEVELS {
                if d.heads[l] != NIL {
                    return Err(bad(format!(
                        "{which}: layer {l} has a head above a missing one"
                    )));
                }
            }
            break;
        }
        let mut here: HashMap<u32, (Option<u32>, u32)> = HashMap::new();
        let mut prev_high: Option<u32> = None;
        let mut live_keys = 0u64;
        let (mut min, mut max) = (KEY_TOP, 0u32);
        let mut n = head;
        let mut last_high = 0u32;
        while n != NIL {
            let abs = (d.first_pool + (n >> POOL_SHIFT), n & INDEX_MASK);
            if seen.insert(abs, ()).is_some() {
                return Err(bad(format!("{which}: node {n:#x} is reached twice")));
            }
            let node = snap.node(d.first_pool, n)?;
            let meta = val_of(node[META_SLOT]);
            let (high, next) = (key_of(node[HIGH_SLOT]), val_of(node[HIGH_SLOT]));
            if meta & (DEAD | FREED) != 0 {
                return Err(bad(format!(
                    "{which}: layer {level} links dead node {n:#x}"
                )));
            }
            if meta & LEVEL_MASK != level as u32 {
                return Err(bad(format!(
                    "{which}: node {n:#x} of layer {level} says layer {}",
                    meta & LEVEL_MASK
                )));
            }
            if (n == head) != (meta & HEAD != 0) {
                return Err(bad(format!("{which}: node {n:#x} has a wrong head mark")));
            }
            if let Some(p) = prev_high {
                if high <= p {
                    return Err(bad(format!(
                        "{which}: layer {level}: high {high} after {p}"
                    )));
                }
            }
            let slots = &node[..NODE_KEYS];
            let count = slots.iter().take_while(|&&s| key_of(s) != NIL).count();
            if slots[count..].iter().any(|&s| key_of(s) != NIL) {
                return Err(bad(format!(
                    "{which}: node {n:#x} has a gap among its keys"
                )));
            }
            let keys: Vec<u32> = slots[..count].iter().map(|&s| key_of(s)).collect();
            let sorted = level > 0 || d.flags & UNSORTED == 0;
            let mut ordered = keys.clone();
            ordered.sort_unstable();
            ordered.dedup();
            if ordered.len() != keys.len() || (sorted && ordered != keys) {
                return Err(bad(format!(
                    "{which}: node {n:#x} keys out of order or repeated: {keys:?}"
                )));
            }
            for (j, &k) in keys.iter().enumerate() {
                let above_prev = prev_high.is_none_or(|p| k > p);
                if !(above_prev && k <= high) {
                    // The first entry of an index node may sit at its range's start.
                    let first_ok =
                        level > 0 && j == 0 && prev_high.is_none_or(|p| k <= p.saturating_add(1));
                    if !first_ok {
                        return Err(bad(format!(
                            "{which}: key {k} of node {n:#x} is outside its range ({prev_high:?}, {high}]"
                        )));
                    }
                }
            }
            if level == 0 {
                for &k in &keys {
                    if k < range.0 || k > range.1 {
                        return Err(bad(format!(
                            "{which}: key {k} is outside the list's keys {range:?}"
                        )));
                    }
                    min = min.min(k);
                    max = max.max(k);
                }
                live_keys += count as u64;
            } else {
                if n == head && keys.first() != Some(&0) {
                    return Err(bad(format!(
                        "{which}: head of layer {level} does not start at 0"
                    )));
                }
                if let (Some(&k0), Some(p)) = (keys.first(), prev_high) {
                    if k0 > p.saturating_add(1) {
                        return Err(bad(format!(
                            "{which}: index node {n:#x} starts at {k0}, past its range start {}",
                            p + 1
                        )));
                    }
                }
                for &s in &slots[..count] {
                    let (k, down) = (key_of(s), val_of(s));
                    let Some(&(lower, dhigh)) = below.get(&down) else {
                        return Err(bad(format!(
                            "{which}: entry {k} of layer {level} names {down:#x}, not a live node of layer {}",
                            level - 1
                        )));
                    };
                    // The node's range must start below the entry's key (a search that
                    // goes down lands at or left of the node covering its key). Its high
                    // may be below the key: a merge-split can lower it, and the search
                    // then moves right.
                    if lower.is_some_and(|p| p >= k) {
                        return Err(bad(format!(
                            "{which}: entry {k} names node {down:#x} covering ({lower:?}, {dhigh}]"
                        )));
                    }
                }
            }
            here.insert(n, (prev_high, high));
            prev_high = Some(high);
            last_high = high;
            n = next;
        }
        if last_high != KEY_TOP {
            return Err(bad(format!(
                "{which}: layer {level} ends at {last_high}, not 2^32 - 1"
            )));
        }
        if level == 0 {
            if live_keys != d.count {
                return Err(bad(format!(
                    "{which}: counts {} keys but holds {live_keys}",
                    d.count
                )));
            }
            if d.bounds_dirty == 0 && (d.min_key, d.max_key) != (min, max) {
                return Err(bad(format!(
                    "{which}: bounds ({}, {}) but keys span ({min}, {max})",
                    d.min_key, d.max_key
                )));
            }
        }
        below = here;
    }
    Ok(())
}

/// Validates every list of `lists` (and its auxiliary list).
pub(crate) fn validate(lists: &Lists) -> Result<()> {
    let snap = Snapshot::of(lists)?;
    let descs = lists.list_descs()?;
    let mut seen = HashMap::new();
    for (i, d) in descs.iter().enumerate() {
        let range = if lists.shift >= 32 {
            (1, KEY_TOP - 1)
        } else {
            let lo = (i as u64) << lists.shift;
            let hi = ((i as u64 + 1) << lists.shift) - 1;
            (lo.max(1) as u32, hi.min(u64::from(KEY_TOP - 1)) as u32)
        };
        let which = if descs.len() == 1 {
            "the skip list".to_string()
        } else {
            format!("range {i}")
        };
        check_list(&snap, d, &which, range, &mut seen)?;
    }
    // Every node handed out is either reached or on its pool's free list (once).
    for (p, pd) in lists.host_pools.iter().enumerate() {
        let words = &snap.pools[p];
        let mut free = std::collections::HashSet::new();
        let top = pd.free_top.max(0) as usize;
        let list = lists.free_list(p, top)?;
        for &i in &list {
            if !free.insert(i) {
                return Err(bad(format!("pool {p}: node {i} is on the free list twice")));
            }
            let meta = val_of(words[i as usize * NODE_SLOTS + META_SLOT]);
            if meta & FREED == 0 {
                return Err(bad(format!("pool {p}: free node {i} is not marked freed")));
            }
        }
        for i in 0..pd.bump {
            let reached = seen.contains_key(&(p as u32, i));
            if reached == free.contains(&i) {
                return Err(bad(format!(
                    "pool {p}: node {i} is {} (leaked or double-owned)",
                    if reached {
                        "both reached and free"
                    } else {
                        "neither reached nor free"
                    }
                )));
            }
        }
    }
    if let Some(aux) = &lists.aux {
        validate(aux)?;
        let listed: std::collections::BTreeSet<u32> =
            aux.to_vec()?.into_iter().map(|(k, _)| k - 1).collect();
        for (i, d) in descs.iter().enumerate() {
            if (d.count > 0) != listed.contains(&(i as u32)) {
                return Err(bad(format!(
                    "range {i} holds {} keys but the auxiliary list {} it",
                    d.count,
                    if listed.contains(&(i as u32)) {
                        "lists"
                    } else {
                        "misses"
                    }
                )));
            }
        }
    }
    Ok(())
}

/// Nodes of every list (the auxiliary list's too) that the index misses: live, holding a
/// key, not a head, below the top layer cap, and named by no entry of the layer above.
pub(crate) fn unindexed(lists: &Lists) -> Result<u64> {
    let snap = Snapshot::of(lists)?;
    let cap: usize = snap.pools.iter().map(Vec::len).sum::<usize>() / NODE_SLOTS + 1;
    let mut total = 0u64;
    for d in lists.list_descs()? {
        // Per layer: its candidates (nodes that should be named) and the nodes its
        // entries name.
        let mut candidates: Vec<Vec<u32>> = Vec::new();
        let mut names: Vec<std::collections::HashSet<u32>> = Vec::new();
        for level in 0..MAX_LEVELS {
            if d.heads[level] == NIL {
                break;
            }
            let (mut mine, mut named) = (Vec::new(), std::collections::HashSet::new());
            let (mut n, mut steps) = (d.heads[level], 0usize);
            while n != NIL {
                let node = snap.node(d.first_pool, n)?;
                let meta = val_of(node[META_SLOT]);
                let keys = node[..NODE_KEYS].iter().filter(|&&s| key_of(s) != NIL);
                if meta & DEAD == 0 {
                    if level > 0 {
                        named.extend(keys.clone().map(|&s| val_of(s)));
                    }
                    if meta & HEAD == 0 && keys.count() > 0 && level + 1 < MAX_LEVELS {
                        mine.push(n);
                    }
                }
                n = val_of(node[HIGH_SLOT]);
                steps += 1;
                if steps > cap {
                    return Err(bad("a layer's next links form a cycle".into()));
                }
            }
            candidates.push(mine);
            names.push(named);
        }
        for (level, mine) in candidates.iter().enumerate() {
            let above = names.get(level + 1);
            total += mine
                .iter()
                .filter(|n| !above.is_some_and(|a| a.contains(n)))
                .count() as u64;
        }
    }
    if let Some(aux) = &lists.aux {
        total += unindexed(aux)?;
    }
    Ok(total)
}

impl Lists {
    /// Every live pair of every list, in key order. Synchronizes.
    pub(crate) fn to_vec(&self) -> Result<Vec<(u32, u32)>> {
        let snap = Snapshot::of(self)?;
        let mut out = Vec::new();
        for d in self.list_descs()? {
            out.extend(pairs(&snap, &d)?);
        }
        Ok(out)
    }
}
