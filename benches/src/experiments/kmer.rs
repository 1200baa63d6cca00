//! `kmer`: the case study of Patel et al. (2026), §6 (Fig. 17), on the local GPU: k-mer
//! counting (16-mers of sequencing reads into a k-mer → count table, `add_many`) and
//! metagenomic classification (a k-mer → taxon table built from reference genomes, then
//! a lookup of every read k-mer and a vote per read), with RangeTable over FlatTable in
//! host-mapped memory, and RangeTable in the tiered placement at 1.5x its budget, all
//! in the same run; and RangeSkipList over SkipList, both host-mapped, for the same two
//! steps. Inputs are seeded synthetic genomes and reads with 1 % substitution
//! errors (`gpuds_oversub::kmer`), the reads' k-mers encoded on the device; counts are
//! checked against a host count and the classification's accuracy is reported.
//! `--keys N` sets the read k-mers (default 2^24; `quick` 2^22).

use std::collections::HashMap;

use gpuds_core::Result;
use gpuds_oversub::kmer::{
    classify, community, device_table_keys, kmers, merge_taxa, reads, table_key, Orientation,
};
use gpuds_oversub::{
    FlatTable, Placement, RangeSkipList, RangeSkipListConfig, RangeTable, RangeTableConfig,
    SkipList,
};

use super::oversub::range_config;
use super::{core_error, Accepts, Case, Experiment, Params, Scale};
use crate::bench::Bench;
use crate::report::{Baseline, Row, Unit};
use crate::timing::{time_once, Timing};

/// The `kmer` experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "kmer",
    about: "k-mer counting and classification (Patel 2026, §6, Fig. 17): RangeTable vs FlatTable, host-mapped and tiered",
    accepts: Accepts::KEYS,
    plan,
};

const NAME: &str = "kmer";
const READ_LEN: usize = 150;
const TAXA: u32 = 8;

fn plan(params: &Params) -> Vec<Case> {
    let quick = params.scale == Scale::Quick;
    let n = params
        .keys_or(if quick { 1 << 22 } else { 1 << 24 })
        .max(1 << 12);
    vec![
        Case::new("Fig. 17 k-mer counting and classification", move |b| {
            rows(b, n)
        }),
        Case::new("Fig. 17 skip lists", move |b| skip_rows(b, n)),
    ]
}

/// The case study's inputs: reads with their true taxon, the reads' k-mer keys (encoded
/// on the device), their host counts, and the k-mer -> taxon database of the references
/// (k-mers shared by taxa unclassified).
struct Inputs {
    labelled: Vec<(u32, Vec<u8>)>,
    read_keys: Vec<u32>,
    host_counts: HashMap<u32, u32>,
    db_keys: Vec<u32>,
    db_taxa: Vec<u32>,
}

fn inputs(gpu: &gpuds_core::Gpu, n: usize) -> Result<Inputs> {
    let genome_len = (n / 4).max(1 << 12);
    let refs = community(TAXA, genome_len, 17);
    let per_taxon = n.div_ceil((READ_LEN - 15) * TAXA as usize);
    let mut labelled = Vec::new();
    for (i, (taxon, genome)) in refs.iter().enumerate() {
        for r in reads(genome, per_taxon, READ_LEN, 0.01, 100 + i as u64) {
            labelled.push((*taxon, r.seq));
        }
    }
    let seqs: Vec<&[u8]> = labelled.iter().map(|(_, seq)| seq.as_slice()).collect();
    let encoded = device_table_keys(gpu, &seqs, Orientation::AsRead).map_err(err)?;
    let read_keys = gpu.stream().clone_dtoh(&encoded.keys)?;
    let mut host_counts: HashMap<u32, u32> = HashMap::new();
    for &k in &read_keys {
        *host_counts.entry(k).or_default() += 1;
    }
    let mut db: HashMap<u32, u32> = HashMap::new();
    for (taxon, genome) in &refs {
        for k in kmers(genome).filter_map(table_key) {
            db.entry(k)
                .and_modify(|t| *t = merge_taxa(*t, *taxon))
                .or_insert(*taxon);
        }
    }
    let (db_keys, db_taxa) = db.iter().map(|(&k, &t)| (k, t)).unzip();
    Ok(Inputs {
        labelled,
        read_keys,
        host_counts,
        db_keys,
        db_taxa,
    })
}

/// The share of reads classified as their true taxon (%), from the lookups of every read
/// k-mer (`found[i]` for `read_keys[i]`).
fn accuracy(inp: &Inputs, found: &[Option<u32>]) -> f64 {
    let answers: HashMap<u32, u32> = inp
        .read_keys
        .iter()
        .zip(found)
        .filter_map(|(&k, v)| v.map(|t| (k, t)))
        .collect();
    let correct = inp
        .labelled
        .iter()
        .filter(|(taxon, seq)| classify(seq, |k| answers.get(&k).copied()) == Some(*taxon))
        .count();
    correct as f64 / inp.labelled.len().max(1) as f64 * 100.0
}

/// Fig. 17 with the skip lists: RangeSkipList (SL-OVS) over SkipList (SL-UVM), both
/// host-mapped; counting with `add_many`, classification lookups with `get_many`.
fn skip_rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let inp = inputs(&gpu, n)?;
    let m = inp.read_keys.len();
    let ones = vec![1u32; m];
    let host = Placement::HostMapped;
    let mut skip = SkipList::new(&gpu, host).map_err(err)?;
    let ranged_config = RangeSkipListConfig {
        placement: host,
        ..Default::default()
    };
    let mut ranged = RangeSkipList::with_config(&gpu, ranged_config).map_err(err)?;
    let sc = time_once(&gpu, || skip.add_many(&inp.read_keys, &ones).map_err(err))?;
    let rc = time_once(&gpu, || ranged.add_many(&inp.read_keys, &ones).map_err(err))?;
    let sample: Vec<u32> = inp.host_counts.keys().copied().take(1 << 16).collect();
    let want: Vec<Option<u32>> = sample
        .iter()
        .map(|k| inp.host_counts.get(k).copied())
        .collect();
    let ok = skip.get_many(&sample).map_err(err)? == want
        && ranged.get_many(&sample).map_err(err)? == want;
    let checked = if ok {
        "counts checked"
    } else {
        "COUNTS DIFFER"
    };
    let mut db_skip = SkipList::new(&gpu, host).map_err(err)?;
    let mut db_ranged = RangeSkipList::with_config(&gpu, ranged_config).map_err(err)?;
    db_skip
        .insert_many(&inp.db_keys, &inp.db_taxa)
        .map_err(err)?;
    db_ranged
        .insert_many(&inp.db_keys, &inp.db_taxa)
        .map_err(err)?;
    let mut found = Vec::new();
    let sl = time_once(&gpu, || {
        found = db_skip.get_many(&inp.read_keys).map_err(err)?;
        Ok(())
    })?;
    let mut found_ranged = Vec::new();
    let rl = time_once(&gpu, || {
        found_ranged = db_ranged.get_many(&inp.read_keys).map_err(err)?;
        Ok(())
    })?;
    let same = if found == found_ranged {
        "same answers"
    } else {
        "ANSWERS DIFFER"
    };
    let base = |ms: f64| {
        Some(Baseline {
            label: "SkipList host-mapped, this run".into(),
            rate: m as f64 / (ms * 1e-3) / 1e9,
        })
    };
    Ok(vec![
        row("Fig. 17 k-mer counting, skip lists", "SkipList", m, sc).with_note(format!(
            "host-mapped; {} distinct 16-mers",
            inp.host_counts.len()
        )),
        row("Fig. 17 k-mer counting, skip lists", "RangeSkipList", m, rc)
            .with_baseline(base(sc))
            .with_note(format!(
                "host-mapped; {:.2}x SkipList (paper's target >= 2.37x); {checked}",
                sc / rc
            )),
        row(
            "Fig. 17 classification lookups, skip lists",
            "SkipList",
            m,
            sl,
        )
        .with_note(format!(
            "host-mapped; {:.1} % of reads classified correctly",
            accuracy(&inp, &found)
        )),
        row(
            "Fig. 17 classification lookups, skip lists",
            "RangeSkipList",
            m,
            rl,
        )
        .with_baseline(base(sl))
        .with_note(format!(
            "host-mapped; {:.2}x SkipList (paper's target >= 2.37x); {same}",
            sl / rl
        )),
    ])
}

fn err(e: gpuds_oversub::Error) -> gpuds_core::Error {
    core_error(e)
}

fn row(name: &str, structure: &str, n: usize, ms: f64) -> Row {
    Row::new(
        NAME,
        name,
        n as u64,
        Timing::once(ms),
        n as f64,
        Unit::GigaItemsPerSecond,
    )
    .with_structure(structure)
}

/// The tiered table of `sized` (inner tables sized for the keys) with a device budget
/// of 1/1.5 of `structure` bytes.
fn tiered(sized: RangeTableConfig, structure: u64) -> RangeTableConfig {
    RangeTableConfig {
        placement: Placement::Tiered {
            device_budget_bytes: (structure as f64 / 1.5) as u64,
        },
        ..sized
    }
}

fn rows(bench: &mut Bench, n: usize) -> Result<Vec<Row>> {
    let gpu = bench.gpu.clone();
    let inp = inputs(&gpu, n)?;
    let (read_keys, host_counts) = (&inp.read_keys, &inp.host_counts);
    let m = read_keys.len();
    let ones = vec![1u32; m];
    // Counting.
    let mut flat =
        FlatTable::new(&gpu, host_counts.len() as u64, Placement::HostMapped).map_err(err)?;
    // k-mer keys spread over the whole key space: inner tables sized for the keys each
    // range gets (the paper's full-range inner tables would take 64 GiB here).
    let sized = range_config(read_keys, Placement::HostMapped);
    let mut range = RangeTable::with_config(&gpu, sized).map_err(err)?;
    let fc = time_once(&gpu, || flat.add_many(read_keys, &ones).map_err(err))?;
    let rc = time_once(&gpu, || range.add_many(read_keys, &ones).map_err(err))?;
    let mut tier =
        RangeTable::with_config(&gpu, tiered(sized, range.stats().host_bytes)).map_err(err)?;
    let tc = time_once(&gpu, || tier.add_many(read_keys, &ones).map_err(err))?;
    let sample: Vec<u32> = host_counts.keys().copied().take(1 << 16).collect();
    let want: Vec<Option<u32>> = sample.iter().map(|k| host_counts.get(k).copied()).collect();
    let ok = flat.get_many(&sample).map_err(err)? == want
        && range.get_many(&sample).map_err(err)? == want
        && tier.get_many(&sample).map_err(err)? == want;
    let checked = if ok {
        "counts checked"
    } else {
        "COUNTS DIFFER"
    };
    let flat_rate = m as f64 / (fc * 1e-3) / 1e9;
    let base = || {
        Some(Baseline {
            label: "FlatTable host-mapped, this run".into(),
            rate: flat_rate,
        })
    };
    let mut out = vec![
        row("Fig. 17 k-mer counting", "FlatTable", m, fc).with_note(format!(
            "host-mapped; {} distinct 16-mers",
            host_counts.len()
        )),
        row("Fig. 17 k-mer counting", "RangeTable", m, rc)
            .with_baseline(base())
            .with_note(format!("host-mapped; {:.2}x FlatTable; {checked}", fc / rc)),
        row(
            "Fig. 17 k-mer counting, tiered at 1.5x its budget",
            "RangeTable",
            m,
            tc,
        )
        .with_baseline(base())
        .with_note(format!(
            "{:.2}x FlatTable; {} tables in",
            fc / tc,
            tier.stats().moved_in
        )),
    ];
    // Classification: the k-mer -> taxon database, then a lookup of every read k-mer
    // and a vote per read on the host.
    let (db_keys, db_taxa) = (&inp.db_keys, &inp.db_taxa);
    let mut flat =
        FlatTable::new(&gpu, db_keys.len() as u64, Placement::HostMapped).map_err(err)?;
    let sized = range_config(db_keys, Placement::HostMapped);
    let mut range = RangeTable::with_config(&gpu, sized).map_err(err)?;
    flat.insert_many(db_keys, db_taxa).map_err(err)?;
    range.insert_many(db_keys, db_taxa).map_err(err)?;
    let mut tier =
        RangeTable::with_config(&gpu, tiered(sized, range.stats().host_bytes)).map_err(err)?;
    tier.insert_many(db_keys, db_taxa).map_err(err)?;
    let mut found = Vec::new();
    let fl = time_once(&gpu, || {
        found = flat.get_many(read_keys).map_err(err)?;
        Ok(())
    })?;
    let rl = time_once(&gpu, || range.get_many(read_keys).map(drop).map_err(err))?;
    let tl = time_once(&gpu, || tier.get_many(read_keys).map(drop).map_err(err))?;
    let accuracy = accuracy(&inp, &found);
    let flat_rate = m as f64 / (fl * 1e-3) / 1e9;
    let base = || {
        Some(Baseline {
            label: "FlatTable host-mapped, this run".into(),
            rate: flat_rate,
        })
    };
    out.extend([
        row("Fig. 17 classification lookups", "FlatTable", m, fl).with_note(format!(
            "host-mapped; {} reads, {accuracy:.1} % classified correctly",
            inp.labelled.len()
        )),
        row("Fig. 17 classification lookups", "RangeTable", m, rl)
            .with_baseline(base())
            .with_note(format!("host-mapped; {:.2}x FlatTable", fl / rl)),
        row(
            "Fig. 17 classification lookups, tiered at 1.5x its budget",
            "RangeTable",
            m,
            tl,
        )
        .with_baseline(base())
        .with_note(format!("{:.2}x FlatTable", fl / tl)),
    ]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_has_the_table_and_skip_list_cases() {
        assert_eq!(plan(&Params::new(Scale::Quick)).len(), 2);
        assert!(tiered(RangeTableConfig::default(), 3 << 20).placement != Placement::Device);
    }
}
