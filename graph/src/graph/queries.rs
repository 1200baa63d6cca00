//! Queries (edge exists, values, degrees, adjacency) and export (COO, CSR).

use super::*;

impl<W: EdgeValue> DynamicGraph<W> {
    /// Edge-exists queries: whether `src[i] -> dst[i]` is an edge. Ids past the
    /// dictionary are simply absent. Synchronizes.
    pub fn edge_exists_many(&self, src: &[u32], dst: &[u32]) -> Result<Vec<bool>> {
        Ok(self.query(src, dst, false)?.0)
    }

    /// The value of each edge `src[i] -> dst[i]`, `None` where there is none (a set
    /// graph: `Some(())`). Synchronizes.
    pub fn edge_values_many(&self, src: &[u32], dst: &[u32]) -> Result<Vec<Option<W>>> {
        let (found, values) = self.query(src, dst, true)?;
        Ok(found
            .iter()
            .enumerate()
            .map(|(i, &f)| {
                f.then(|| {
                    values
                        .get(i)
                        .map_or_else(W::default, |&d| W::from_device(d))
                })
            })
            .collect())
    }

    pub(super) fn query(
        &self,
        src: &[u32],
        dst: &[u32],
        want_values: bool,
    ) -> Result<(Vec<bool>, Vec<W::Device>)> {
        same_len("src and dst", src.len(), dst.len())?;
        let n = src.len();
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        // Ids past the dictionary (reserved ones included) name no edge: they are answered
        // here and left out of the device batch.
        let limit = self.num_ids;
        let keep: Vec<usize> = (0..n)
            .filter(|&i| src[i] < limit && dst[i] < limit)
            .collect();
        let mut found = vec![false; n];
        let mut values = vec![W::Device::default(); if want_values && !W::SET { n } else { 0 }];
        if keep.is_empty() {
            return Ok((found, values));
        }
        let (ks, kd): (Vec<u32>, Vec<u32>) = keep.iter().map(|&i| (src[i], dst[i])).unzip();
        let m = ks.len();
        let stream = self.gpu.stream().clone();
        let (ds, dd) = (stream.clone_htod(&ks)?, stream.clone_htod(&kd)?);
        let mut bits = stream.alloc_zeros::<u32>(m.div_ceil(32))?;
        let mut vals = if want_values && !W::SET {
            Some(stream.alloc_zeros::<W::Device>(m)?)
        } else {
            None
        };
        let call = CallStatus::new(&self.gpu, m)?;
        let kernel = self.kernel("find_edges")?;
        let shape = self.item_shape(&kernel, m)?;
        let r = self.graph_ref(call.status_ptr());
        let (m64, null, failed) = (m as u64, 0u64, call.bits_ptr());
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&ds).arg(&dd).arg(&m64);
        match &mut vals {
            Some(v) => args.arg(v),
            None => args.arg(&null),
        };
        args.arg(&mut bits).arg(&failed);
        // SAFETY: reads the m requests, writes bits[..m/32], values[..m], failure bits.
        unsafe { args.launch(shape) }?;
        call.check()?;
        let bits = stream.clone_dtoh(&bits)?;
        let got = match &vals {
            Some(v) => stream.clone_dtoh(v)?,
            None => Vec::new(),
        };
        for (j, &i) in keep.iter().enumerate() {
            found[i] = bits[j / 32] >> (j % 32) & 1 == 1;
            if let Some(&v) = got.get(j) {
                values[i] = v;
            }
        }
        Ok((found, values))
    }

    /// Out-degrees of `ids` (0 past the dictionary and for deleted vertices; exact).
    /// Synchronizes.
    pub fn degree_many(&self, ids: &[u32]) -> Result<Vec<u32>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream();
        let d = stream.clone_htod(ids)?;
        let mut out = stream.alloc_zeros::<u32>(ids.len())?;
        let kernel = self.kernel("degree_of")?;
        let shape = self.item_shape(&kernel, ids.len())?;
        let r = self.device_ref();
        let n64 = ids.len() as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r).arg(&d).arg(&n64).arg(&mut out);
        // SAFETY: reads ids[..n], writes out[..n].
        unsafe { args.launch(shape) }?;
        Ok(stream.clone_dtoh(&out)?)
    }

    /// The adjacency of each of `ids` (count pass: the exact degrees; scan; collect
    /// pass: one warp per vertex). Ids past the dictionary have none. Synchronizes.
    pub fn adjacency_many(&self, ids: &[u32]) -> Result<Adjacency<W>> {
        let stream = self.gpu.stream().clone();
        let degrees = self.degree_many(ids)?;
        let mut offsets = Vec::with_capacity(ids.len() + 1);
        let mut at = 0u64;
        offsets.push(0);
        for &d in &degrees {
            at += d as u64;
            offsets.push(at);
        }
        if at == 0 {
            return Ok(Adjacency {
                offsets,
                dst: Vec::new(),
                values: Vec::new(),
            });
        }
        let d_ids = stream.clone_htod(ids)?;
        let d_offsets = stream.clone_htod(&offsets)?;
        let (dst, values) =
            self.collect(Some(&d_ids), 0, ids.len(), &d_offsets, at as usize, false)?;
        Ok(Adjacency {
            offsets,
            dst: stream.clone_dtoh(&dst.1)?,
            values: self.host_values(values.as_ref())?,
        })
    }

    pub(super) fn host_values(&self, values: Option<&CudaSlice<W::Device>>) -> Result<Vec<W>> {
        Ok(match values {
            Some(v) if !W::SET => self
                .gpu
                .stream()
                .clone_dtoh(v)?
                .into_iter()
                .map(W::from_device)
                .collect(),
            _ => Vec::new(),
        })
    }

    /// The collect pass: live entries of vertices (ids, or first..first + n) at
    /// offsets (`total` > 0 entries). Returns ((src?, dst), values?) on the device.
    #[allow(clippy::type_complexity)]
    pub(super) fn collect(
        &self,
        ids: Option<&CudaSlice<u32>>,
        first: u32,
        n: usize,
        offsets: &CudaSlice<u64>,
        total: usize,
        with_src: bool,
    ) -> Result<(
        (Option<CudaSlice<u32>>, CudaSlice<u32>),
        Option<CudaSlice<W::Device>>,
    )> {
        let stream = self.gpu.stream().clone();
        let mut dst = stream.alloc_zeros::<u32>(total)?;
        let mut src = if with_src {
            Some(stream.alloc_zeros::<u32>(total)?)
        } else {
            None
        };
        let mut values = if W::SET {
            None
        } else {
            Some(stream.alloc_zeros::<W::Device>(total)?)
        };
        let mut overflow = stream.alloc_zeros::<u32>(1)?;
        let kernel = self.kernel("collect")?;
        let shape = self.warp_shape(&kernel, n)?;
        let r = self.device_ref();
        let (null, n64) = (0u64, n as u64);
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        match ids {
            Some(i) => args.arg(i),
            None => args.arg(&null),
        };
        args.arg(&first).arg(&n64).arg(offsets);
        match &mut src {
            Some(s) => args.arg(s),
            None => args.arg(&null),
        };
        args.arg(&mut dst);
        match &mut values {
            Some(v) => args.arg(v),
            None => args.arg(&null),
        };
        args.arg(&mut overflow);
        // SAFETY: each vertex writes at most offsets[i + 1] - offsets[i] entries from
        // offsets[i] (< total), reading its own table.
        unsafe { args.launch(shape) }?;
        if stream.clone_dtoh(&overflow)?[0] != 0 {
            return Err(Error::Invalid(
                "a table holds more live entries than its vertex's count".into(),
            ));
        }
        Ok(((src, dst), values))
    }

    /// Exclusive scan of all degrees, `num_ids + 1` entries, on the device; and the
    /// total.
    pub(super) fn all_offsets(&self) -> Result<(CudaSlice<u64>, u64)> {
        self.offsets_of(None, self.num_ids as usize)
    }

    /// Exclusive scan of the degrees of `ids` (or of `0..n`), `n + 1` entries, on the
    /// device; and the total.
    pub(super) fn offsets_of(
        &self,
        ids: Option<&CudaSlice<u32>>,
        n: usize,
    ) -> Result<(CudaSlice<u64>, u64)> {
        let stream = self.gpu.stream().clone();
        let mut d = stream.alloc_zeros::<u64>(n + 1)?;
        let kernel = self.kernel("degrees_wide")?;
        let shape = self.item_shape(&kernel, n + 1)?;
        let r = self.device_ref();
        let n64 = n as u64;
        let mut args = stream.launch_builder(kernel.func());
        args.arg(&r);
        let null = 0u64;
        match ids {
            Some(ids) => args.arg(ids),
            None => args.arg(&null),
        };
        args.arg(&n64).arg(&mut d);
        // SAFETY: writes d[..=n]; reads the counts of ids[..n] (or of ids below n).
        unsafe { args.launch(shape) }?;
        let mut offsets = stream.alloc_zeros::<u64>(n + 1)?;
        let total = primitives::exclusive_scan(&self.gpu, &d, &mut offsets)?;
        Ok((offsets, total))
    }

    /// Every stored edge as COO on the device: (src, dst, values).
    #[allow(clippy::type_complexity)]
    pub(crate) fn device_coo(
        &self,
    ) -> Result<Option<(CudaSlice<u32>, CudaSlice<u32>, Option<CudaSlice<W::Device>>)>> {
        let (offsets, total) = self.all_offsets()?;
        if total == 0 {
            return Ok(None);
        }
        let ((src, dst), values) = self.collect(
            None,
            0,
            self.num_ids as usize,
            &offsets,
            total as usize,
            true,
        )?;
        let src = src.ok_or_else(|| Error::Invalid("collect returned no sources".into()))?;
        Ok(Some((src, dst, values)))
    }

    /// Every stored edge (each direction of an undirected edge), vertex by vertex.
    /// Synchronizes.
    pub fn to_coo(&self) -> Result<EdgeList<W>> {
        let stream = self.gpu.stream().clone();
        let Some((src, dst, values)) = self.device_coo()? else {
            return Ok(EdgeList::default());
        };
        Ok(EdgeList {
            src: stream.clone_dtoh(&src)?,
            dst: stream.clone_dtoh(&dst)?,
            values: self.host_values(values.as_ref())?,
        })
    }

    /// The graph as CSR over ids `0..vertex_ids()`, each row sorted by destination when
    /// `sorted` (on the host), else in table order. Synchronizes.
    pub fn to_csr(&self, sorted: bool) -> Result<Csr<W>> {
        let stream = self.gpu.stream().clone();
        let (offsets, total) = self.all_offsets()?;
        let row_offsets = stream.clone_dtoh(&offsets)?;
        if total == 0 {
            return Ok(Csr {
                row_offsets,
                cols: Vec::new(),
                values: Vec::new(),
            });
        }
        let ((_, dst), values) = self.collect(
            None,
            0,
            self.num_ids as usize,
            &offsets,
            total as usize,
            false,
        )?;
        let mut cols = stream.clone_dtoh(&dst)?;
        let mut vals = self.host_values(values.as_ref())?;
        if sorted {
            for w in row_offsets.windows(2) {
                let (a, b) = (w[0] as usize, w[1] as usize);
                if vals.is_empty() {
                    cols[a..b].sort_unstable();
                } else {
                    let mut row: Vec<(u32, W)> = cols[a..b]
                        .iter()
                        .copied()
                        .zip(vals[a..b].iter().copied())
                        .collect();
                    row.sort_unstable_by_key(|p| p.0);
                    for (k, (c, v)) in row.into_iter().enumerate() {
                        cols[a + k] = c;
                        vals[a + k] = v;
                    }
                }
            }
        }
        Ok(Csr {
            row_offsets,
            cols,
            values: vals,
        })
    }
}
