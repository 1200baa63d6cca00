//! The registry of experiments.
//!
//! An experiment turns [`Params`] (a [`Scale`] and the command line's `--keys`, `--load`,
//! `--key` and `--value`) into a plan: a list of [`Case`]s, each measuring one or a few
//! rows. The runner shows progress case by case, so a sweep is simply a plan with
//! many cases. `gpuds-bench quick` runs every experiment's [`Scale::Quick`] plan in
//! registry order, limits first, so that later rows can be compared with them.
//!
//! A new structure crate adds one line to [`registry`] and one module here.

pub mod alloc;
pub mod btree;
pub mod graph;
pub mod hive;
pub mod kmer;
pub mod limits;
pub mod linear;
pub mod mvbtree;
pub mod oversub;
pub mod primitives;
pub mod skiplist;
pub mod slabhash;
pub mod wide;

use gpuds_core::Result;

use crate::bench::Bench;
use crate::report::Row;

/// A structure crate's error that an experiment turns into gpuds-core's (its `Result`).
pub(crate) trait CrateError: std::fmt::Display {
    /// The error's `Core` variant, if it is one.
    fn into_core(self) -> std::result::Result<gpuds_core::Error, Self>
    where
        Self: Sized;
}

macro_rules! crate_error {
    ($($c:ident),*) => {$(
        impl CrateError for $c::Error {
            fn into_core(self) -> std::result::Result<gpuds_core::Error, Self> {
                match self {
                    $c::Error::Core(e) => Ok(e),
                    other => Err(other),
                }
            }
        }
    )*};
}
crate_error!(gpuds_alloc, gpuds_slabhash, gpuds_hive, gpuds_btree);

/// A structure crate's error as gpuds-core's: its `Core` variant as it is, any other as
/// [`gpuds_core::Error::InvalidArgument`] with its message.
pub(crate) fn core_error<E: CrateError>(e: E) -> gpuds_core::Error {
    e.into_core()
        .unwrap_or_else(|other| gpuds_core::Error::InvalidArgument(other.to_string()))
}

/// How large an experiment runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Small sizes, for `gpuds-bench quick`: seconds per experiment.
    Quick,
    /// The papers' sizes.
    Full,
}

/// A key or value type of the command line (`--key`, `--value`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Word {
    /// 32-bit words.
    #[default]
    U32,
    /// 64-bit words.
    U64,
}

impl Word {
    /// The type's name in result rows, e.g. `u32`.
    pub fn name(self) -> &'static str {
        match self {
            Word::U32 => "u32",
            Word::U64 => "u64",
        }
    }
}

/// What a plan is made from: the scale and the command line's experiment options.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// The scale (`quick` or an experiment's own run).
    pub scale: Scale,
    /// `--keys`: the problem size replacing the experiment's fixed one (the largest size
    /// of a size sweep), if given.
    pub keys: Option<u64>,
    /// `--load`: the load factors replacing the experiment's fixed ones, if given.
    pub loads: Option<Vec<f64>>,
    /// `--key`: the key type.
    pub key: Word,
    /// `--value`: the value type.
    pub value: Word,
}

impl Params {
    /// The defaults at `scale`: the experiments' own sizes, loads and u32 words.
    pub fn new(scale: Scale) -> Self {
        Self {
            scale,
            keys: None,
            loads: None,
            key: Word::U32,
            value: Word::U32,
        }
    }

    /// `--keys` if given, else `default`.
    pub fn keys_or(&self, default: usize) -> usize {
        self.keys.map_or(default, |k| k as usize)
    }

    /// `--load` if given, else `default`.
    pub fn loads_or(&self, default: &[f64]) -> Vec<f64> {
        self.loads.clone().unwrap_or_else(|| default.to_vec())
    }

    /// The sizes of a sweep: `defaults` unless `--keys` is given, then the powers of two
    /// `from`, `4 from`, `16 from`, ... below `--keys`, and `--keys` itself.
    pub fn sweep(&self, from: usize, defaults: &[usize]) -> Vec<usize> {
        match self.keys {
            None => defaults.to_vec(),
            Some(max) => {
                let max = max as usize;
                let mut sizes: Vec<usize> =
                    std::iter::successors(Some(from.max(1)), |s| s.checked_mul(4))
                        .take_while(|&s| s < max)
                        .collect();
                sizes.push(max);
                sizes
            }
        }
    }
}

/// The key and value types an experiment measures (`--key`, `--value`): a list of
/// (key, value) forms, u32/u32 among them. [`check`] refuses any other form at the
/// command line, `quick` skips the experiment at it, and a plan that switches on the
/// types reads the same list (see [`wide::plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forms(&'static [(Word, Word)]);

impl Forms {
    /// u32 keys and values only.
    pub const NARROW: Forms = Forms(&[(Word::U32, Word::U32)]);
    /// Every combination of u32 and u64 keys and values.
    pub const EVERY: Forms = Forms(&[
        (Word::U32, Word::U32),
        (Word::U32, Word::U64),
        (Word::U64, Word::U32),
        (Word::U64, Word::U64),
    ]);

    /// The forms `forms`, each a (key, value) pair; list u32/u32 among them.
    ///
    /// ```
    /// use gpuds_benches::experiments::{Forms, Word};
    /// const NO_WIDE_VALUES: Forms = Forms::new(&[(Word::U32, Word::U32), (Word::U64, Word::U32)]);
    /// assert!(NO_WIDE_VALUES.takes(Word::U64, Word::U32));
    /// assert!(!NO_WIDE_VALUES.takes(Word::U32, Word::U64));
    /// ```
    pub const fn new(forms: &'static [(Word, Word)]) -> Forms {
        Forms(forms)
    }

    /// Whether `key` keys with `value` values are measured.
    pub fn takes(self, key: Word, value: Word) -> bool {
        self.0.contains(&(key, value))
    }

    /// Whether some form has a 64-bit key or value.
    pub fn wide(self) -> bool {
        self.0.iter().any(|&f| f != (Word::U32, Word::U32))
    }

    /// The forms as `key/value` names, e.g. `u32/u32, u64/u64`.
    pub fn names(self) -> String {
        let names: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{}/{}", k.name(), v.name()))
            .collect();
        names.join(", ")
    }
}

/// Which of the command line's experiment options an experiment takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepts {
    /// `--keys` changes its sizes.
    pub keys: bool,
    /// `--load` changes its loads.
    pub load: bool,
    /// The `--key` and `--value` forms it measures.
    pub words: Forms,
}

impl Accepts {
    /// Takes none of the options.
    pub const NONE: Accepts = Accepts {
        keys: false,
        load: false,
        words: Forms::NARROW,
    };
    /// Takes `--keys` only (u32 words, no load axis).
    pub const KEYS: Accepts = Accepts {
        keys: true,
        load: false,
        words: Forms::NARROW,
    };
    /// Takes `--keys` and `--load` (u32 words).
    pub const KEYS_LOAD: Accepts = Accepts {
        keys: true,
        load: true,
        words: Forms::NARROW,
    };
    /// Takes `--keys`, `--load` and every combination of 64-bit words.
    pub const WIDE_KEYS_LOAD: Accepts = Accepts {
        keys: true,
        load: true,
        words: Forms::EVERY,
    };
}

/// Whether `experiment` (`quick` or a registry name) can run with `params`: a message for
/// the command line (exit code 2) when it cannot. `quick` takes `--keys` and `--load`
/// where its experiments do and ignores them elsewhere; with other words than u32/u32 it
/// runs only the experiments whose [`Forms`] take them.
pub fn check(experiment: &str, params: &Params) -> Result<(), String> {
    if experiment == crate::cli::QUICK {
        return Ok(());
    }
    let Some(e) = find(experiment) else {
        return Err(format!("no experiment called {experiment}"));
    };
    let (key, value) = (params.key, params.value);
    let words = e.accepts.words;
    if !words.takes(key, value) {
        if !words.wide() {
            let what = if key == Word::U64 { "keys" } else { "values" };
            return Err(format!(
                "u64 {what} do not apply to {} (it has no 64-bit form)",
                e.name
            ));
        }
        return Err(format!(
            "--key {} --value {} does not apply to {} (its key/value forms: {})",
            key.name(),
            value.name(),
            e.name,
            words.names()
        ));
    }
    if params.keys.is_some() && !e.accepts.keys {
        return Err(format!(
            "--keys does not apply to {} (its sizes are fixed)",
            e.name
        ));
    }
    if params.loads.is_some() && !e.accepts.load {
        return Err(format!(
            "--load does not apply to {} (it has no load axis)",
            e.name
        ));
    }
    Ok(())
}

/// What a case does: measures its rows on the bench.
pub type CaseFn = Box<dyn FnOnce(&mut Bench) -> Result<Vec<Row>>>;

/// One step of a plan: measures its rows when run.
pub struct Case {
    /// Shown next to the progress bar while the case runs.
    pub label: String,
    /// Measures the case's rows.
    pub run: CaseFn,
}

impl Case {
    /// A case from a label and a function.
    pub fn new(
        label: impl Into<String>,
        run: impl FnOnce(&mut Bench) -> Result<Vec<Row>> + 'static,
    ) -> Self {
        Self {
            label: label.into(),
            run: Box::new(run),
        }
    }
}

/// A named experiment of `gpuds-bench`.
pub struct Experiment {
    /// The name given on the command line.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// The command line's experiment options it takes.
    pub accepts: Accepts,
    /// The cases to run with the given parameters.
    pub plan: fn(&Params) -> Vec<Case>,
}

/// Every experiment, in the order `quick` runs them.
pub fn registry() -> Vec<Experiment> {
    vec![
        limits::EXPERIMENT,
        primitives::EXPERIMENT,
        linear::EXPERIMENT,
        hive::EXPERIMENT,
        hive::TARGETS,
        alloc::EXPERIMENT,
        btree::EXPERIMENT,
        btree::RANGE,
        mvbtree::EXPERIMENT,
        slabhash::EXPERIMENT,
        slabhash::TARGETS,
        graph::EXPERIMENT,
        graph::SORTED_EXPERIMENT,
        oversub::EXPERIMENT,
        skiplist::EXPERIMENT,
        kmer::EXPERIMENT,
    ]
}

/// The experiment called `name`.
pub fn find(name: &str) -> Option<Experiment> {
    registry().into_iter().find(|e| e.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORDS: [Word; 2] = [Word::U32, Word::U64];

    fn params(scale: Scale, key: Word, value: Word) -> Params {
        Params {
            key,
            value,
            ..Params::new(scale)
        }
    }

    #[test]
    fn every_experiment_takes_u32_words() {
        for e in registry() {
            assert!(e.accepts.words.takes(Word::U32, Word::U32), "{}", e.name);
        }
    }

    #[test]
    fn check_refuses_exactly_the_forms_not_declared() {
        for e in registry() {
            for key in WORDS {
                for value in WORDS {
                    let checked = check(e.name, &params(Scale::Full, key, value));
                    assert_eq!(
                        checked.is_ok(),
                        e.accepts.words.takes(key, value),
                        "{} {key:?}/{value:?}: {checked:?}",
                        e.name
                    );
                }
            }
        }
        assert!(!hive::EXPERIMENT.accepts.words.takes(Word::U32, Word::U64));
        assert!(hive::EXPERIMENT.accepts.words.takes(Word::U64, Word::U64));
        assert!(!btree::RANGE.accepts.words.wide());
    }

    #[test]
    fn wide_plans_have_cases_exactly_at_the_declared_forms() {
        for e in [slabhash::EXPERIMENT, hive::EXPERIMENT, btree::EXPERIMENT] {
            for scale in [Scale::Quick, Scale::Full] {
                for key in WORDS {
                    for value in WORDS {
                        let p = params(scale, key, value);
                        if !wide::asked(&p) {
                            continue;
                        }
                        let cases = (e.plan)(&p);
                        assert_eq!(
                            cases.is_empty(),
                            !e.accepts.words.takes(key, value),
                            "{} {key:?}/{value:?} at {scale:?}",
                            e.name
                        );
                        let form = format!("{} {}/{},", e.name, key.name(), value.name());
                        assert!(cases.iter().all(|c| c.label.starts_with(&form)));
                    }
                }
            }
        }
    }

    #[test]
    fn forms_are_named_in_order() {
        assert_eq!(Forms::NARROW.names(), "u32/u32");
        assert!(!Forms::NARROW.wide());
        assert!(Forms::EVERY.wide());
        assert_eq!(
            hive::EXPERIMENT.accepts.words.names(),
            "u32/u32, u64/u32, u64/u64"
        );
    }
}
