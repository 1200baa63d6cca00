//! Graph inputs: seeded generators of the dissertation's graph families and a Matrix
//! Market loader.
