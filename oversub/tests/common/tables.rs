//! The operations both hash tables share, for the tables' oracle-driven GPU tests.

use gpuds_oversub::{Error, FlatTable, RangeTable};

/// The operations both tables share, for one oracle-driven test.
pub trait Table {
    fn insert(&mut self, k: &[u32], v: &[u32]) -> Result<(), Error>;
    fn remove(&mut self, k: &[u32]) -> Result<Vec<bool>, Error>;
    fn get(&mut self, k: &[u32]) -> Result<Vec<Option<u32>>, Error>;
    fn len(&self) -> u64;
    fn check(&self) -> Result<(), Error>;
    fn pairs(&self) -> Vec<(u32, u32)>;
}

/// Implements [`Table`] with the inherent methods of a table type.
macro_rules! table {
    ($t:ty) => {
        impl Table for $t {
            fn insert(&mut self, k: &[u32], v: &[u32]) -> Result<(), Error> {
                self.insert_many(k, v)
            }
            fn remove(&mut self, k: &[u32]) -> Result<Vec<bool>, Error> {
                self.remove_many(k)
            }
            fn get(&mut self, k: &[u32]) -> Result<Vec<Option<u32>>, Error> {
                self.get_many(k)
            }
            fn len(&self) -> u64 {
                <$t>::len(self).unwrap()
            }
            fn check(&self) -> Result<(), Error> {
                self.validate()
            }
            fn pairs(&self) -> Vec<(u32, u32)> {
                self.to_vec().unwrap()
            }
        }
    };
}
table!(FlatTable);
table!(RangeTable);
