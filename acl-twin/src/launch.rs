//! Kernel launches: host arguments with placeholders (`aclrtLaunchKernelWithHostArgs`), the
//! argument builder (`aclrtKernelArgs*` + `aclrtLaunchKernelWithConfig`), launch attributes.
//!
//! Both forms end as one argument block and a list of placeholders: 8-byte slots that are
//! replaced, at the launch, by the device address of a copy of their data. What the
//! documentation leaves open, assumed here:
//! - host arguments: the kernel's argument block is the bytes before the first placeholder's
//!   data (all of `argsSize` without placeholders); a placeholder's data runs from its
//!   `dataOffset` to the next placeholder's data, or to `argsSize`;
//! - builder: the i-th appended parameter is the kernel's i-th, placed as the kernel's own
//!   layout places it (the BiSheng rule: its alignment rounded up to 4) and refused if its size
//!   differs; a placeholder is an 8-byte pointer parameter; a second buffer request for one
//!   placeholder returns the same buffer; the handle is consumed by its launch;
//! - the argument block must be exactly as long as the kernel's parameters need (the twin
//!   knows them): anything else is `ACL_ERROR_INVALID_PARAM`, not a kernel reading garbage;
//! - batch scheduling (`SCHEM_MODE` 1) and normal scheduling both run all blocks co-resident
//!   (the twin has no other mode); the launch counts which was asked for
//!   (`aclTwinLaunchStats`). `TIMEOUT_US` is recorded (`aclTwinLaunchStats`) and not
//!   enforced (the kernels' own deadlines and the twin's watchdog stop a hang).

use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use ascendc_sys::*;
use ascendc_twin::GmBuffer;

use crate::binary::Function;
use crate::fail::{fail, R};
use crate::runtime::Runtime;
use crate::stream::Stream;

/// One parameter of a builder.
enum Param {
    Value {
        offset: usize,
        bytes: Vec<u8>,
    },
    PlaceHolder {
        offset: usize,
        data: Option<Vec<u8>>,
    },
}

/// An argument list under construction.
pub(crate) struct ArgsBuilder {
    func: Arc<Function>,
    params: Vec<Param>,
    end: usize,
    finalized: bool,
}

impl ArgsBuilder {
    pub fn new(func: Arc<Function>) -> ArgsBuilder {
        ArgsBuilder {
            func,
            params: Vec::new(),
            end: 0,
            finalized: false,
        }
    }

    fn open(&self) -> R<()> {
        if self.finalized {
            return fail(ACL_ERROR_INVALID_PARAM, "the argument list is finalized");
        }
        Ok(())
    }

    /// The offset of the next parameter, which must be `size` bytes: laid out as the kernel's
    /// own parameters are (the twin knows each one's size and alignment; BiSheng's rule).
    fn place(&mut self, size: usize) -> R<usize> {
        let params = self.func.kernel.params();
        let i = self.params.len();
        let Some(p) = params.get(i) else {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "kernel `{}` takes {} parameters, this is parameter {i}",
                    self.func.kernel.name(),
                    params.len()
                ),
            );
        };
        if p.size as usize != size {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "parameter {i} of kernel `{}` is {} bytes, the appended one {size}",
                    self.func.kernel.name(),
                    p.size
                ),
            );
        }
        let align = p.slot_align();
        let at = self.end.div_ceil(align) * align;
        self.end = at + size;
        Ok(at)
    }

    /// Appends a parameter of `bytes`; returns its index.
    pub fn append(&mut self, bytes: &[u8]) -> R<usize> {
        self.open()?;
        if bytes.is_empty() {
            return fail(ACL_ERROR_INVALID_PARAM, "a parameter of 0 bytes");
        }
        let offset = self.place(bytes.len())?;
        self.params.push(Param::Value {
            offset,
            bytes: bytes.to_vec(),
        });
        Ok(self.params.len() - 1)
    }

    /// Appends a placeholder; returns its index.
    pub fn append_placeholder(&mut self) -> R<usize> {
        self.open()?;
        let offset = self.place(8)?;
        self.params.push(Param::PlaceHolder { offset, data: None });
        Ok(self.params.len() - 1)
    }

    /// The host buffer of `size` bytes for placeholder `index`'s data.
    pub fn placeholder_buffer(&mut self, index: usize, size: usize) -> R<*mut c_void> {
        self.open()?;
        if size == 0 {
            return fail(ACL_ERROR_INVALID_PARAM, "a placeholder buffer of 0 bytes");
        }
        match self.params.get_mut(index) {
            Some(Param::PlaceHolder { data, .. }) => match data {
                // A second call for the same placeholder: the same buffer (a new one would
                // free the first while the caller may still write through it).
                Some(d) if d.len() == size => Ok(d.as_mut_ptr().cast()),
                Some(d) => fail(
                    ACL_ERROR_INVALID_PARAM,
                    format!(
                        "the placeholder already has a buffer of {} bytes, asked for {size}",
                        d.len()
                    ),
                ),
                None => {
                    let d = data.insert(vec![0; size]);
                    Ok(d.as_mut_ptr().cast())
                }
            },
            _ => fail(
                ACL_ERROR_INVALID_PARAM,
                "the parameter handle is not a placeholder of this argument list",
            ),
        }
    }

    pub fn finalize(&mut self) -> R<()> {
        self.open()?;
        self.finalized = true;
        Ok(())
    }

    /// The launch this list describes.
    pub fn into_args(self) -> R<(Arc<Function>, Args)> {
        if !self.finalized {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                "the argument list was not finalized (aclrtKernelArgsFinalize)",
            );
        }
        let mut block = vec![0u8; self.end];
        let mut holders = Vec::new();
        for p in self.params {
            match p {
                Param::Value { offset, bytes } => {
                    block[offset..offset + bytes.len()].copy_from_slice(&bytes)
                }
                Param::PlaceHolder { offset, data } => match data {
                    Some(d) => holders.push((offset, d)),
                    None => {
                        return fail(
                            ACL_ERROR_INVALID_PARAM,
                            "a placeholder without data (aclrtKernelArgsGetPlaceHolderBuffer)",
                        )
                    }
                },
            }
        }
        Ok((self.func, Args { block, holders }))
    }
}

/// A launch's arguments: the block and its placeholders (slot offset, data).
pub(crate) struct Args {
    pub block: Vec<u8>,
    pub holders: Vec<(usize, Vec<u8>)>,
}

impl Args {
    /// The arguments of `aclrtLaunchKernelWithHostArgs` (see the module docs).
    pub fn from_host(host: &[u8], ph: &[aclrtPlaceHolderInfo]) -> R<Args> {
        let mut starts: Vec<usize> = ph.iter().map(|p| p.dataOffset as usize).collect();
        starts.sort_unstable();
        starts.dedup();
        let args_end = starts.first().copied().unwrap_or(host.len());
        let mut holders = Vec::new();
        for p in ph {
            let (slot, data) = (p.addrOffset as usize, p.dataOffset as usize);
            if slot + 8 > args_end || data >= host.len() {
                return fail(
                    ACL_ERROR_INVALID_PARAM,
                    format!(
                        "placeholder {{addrOffset {slot}, dataOffset {data}}} is outside the {} bytes of arguments (pointer slots before the first data at {args_end})",
                        host.len()
                    ),
                );
            }
            let end = starts
                .iter()
                .copied()
                .find(|&s| s > data)
                .unwrap_or(host.len());
            holders.push((slot, host[data..end].to_vec()));
        }
        Ok(Args {
            block: host[..args_end].to_vec(),
            holders,
        })
    }
}

/// The attributes of a launch that acl-twin reads.
#[derive(Default)]
pub(crate) struct Attrs {
    pub batch: bool,
    /// `TIMEOUT_US` (0: none).
    pub timeout_us: u64,
    /// Print the launch's failure on stderr (a `<<<>>>` launch: its program has no status to
    /// look at, and seldom checks the stream's).
    pub report: bool,
}

/// Reads `cfg` (null: no attributes).
///
/// # Safety
/// `cfg` is null or points at a config whose `attrs` holds `numAttrs` attributes.
pub(crate) unsafe fn attrs(cfg: *const aclrtLaunchKernelCfg) -> R<Attrs> {
    let mut a = Attrs::default();
    if cfg.is_null() {
        return Ok(a);
    }
    // SAFETY: the caller's contract.
    let cfg = unsafe { &*cfg };
    if cfg.numAttrs == 0 {
        return Ok(a);
    }
    if cfg.attrs.is_null() {
        return fail(
            ACL_ERROR_INVALID_PARAM,
            "cfg has attributes but attrs is null",
        );
    }
    // SAFETY: the caller's contract.
    let list = unsafe { std::slice::from_raw_parts(cfg.attrs, cfg.numAttrs) };
    for at in list {
        if at.id == ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE {
            // SAFETY: schemMode is the member of this attribute (every bit pattern valid).
            let mode = unsafe { at.value.schemMode };
            if mode > 2 {
                return fail(ACL_ERROR_INVALID_PARAM, format!("schemMode {mode}"));
            }
            a.batch = mode == ACL_RT_SCHEM_MODE_BATCH;
        } else if at.id == ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US {
            // SAFETY: timeoutUs is the member of this attribute (every bit pattern valid).
            let t = unsafe { at.value.timeoutUs };
            a.timeout_us = u64::from(t.timeoutHigh) << 32 | u64::from(t.timeoutLow);
        }
    }
    Ok(a)
}

/// Enqueues `func` on `blocks` blocks with `args` on `stream`.
pub(crate) fn launch(
    rt: &Arc<Runtime>,
    func: &Arc<Function>,
    blocks: u32,
    stream: &Arc<Stream>,
    attrs: Attrs,
    mut args: Args,
) -> R<()> {
    let want = func.kernel.args_bytes();
    if args.block.len() != want {
        return fail(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "kernel `{}` takes {want} bytes of arguments, the launch gives {}",
                func.kernel.name(),
                args.block.len()
            ),
        );
    }
    let dev = rt.device(stream.device as i32)?;
    if blocks == 0 || blocks > dev.cores() {
        return fail(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "numBlocks {blocks}: the device has {} vector cores",
                dev.cores()
            ),
        );
    }
    // Placeholder data goes to device memory of its own, held until the launch has run.
    let mut held: Vec<GmBuffer> = Vec::new();
    for (slot, data) in &args.holders {
        let buf = dev
            .alloc(data.len().max(1))
            .or_else(|e| fail(ACL_ERROR_RT_MEMORY_ALLOCATION, e.to_string()))?;
        buf.write(0, data)
            .or_else(|e| fail(ACL_ERROR_RT_INTERNAL_ERROR, e.to_string()))?;
        args.block[*slot..*slot + 8].copy_from_slice(&(buf.addr() as u64).to_le_bytes());
        held.push(buf);
    }
    rt.launches.fetch_add(1, Ordering::Relaxed);
    rt.last_timeout_us
        .store(attrs.timeout_us, Ordering::Relaxed);
    if attrs.batch {
        rt.batch_launches.fetch_add(1, Ordering::Relaxed);
    }
    let kernel = func.kernel;
    let runtime = rt.clone();
    let device = stream.device;
    let report = attrs.report;
    stream.push(Box::new(move || {
        let held = held;
        let mut block = args.block;
        let dev = runtime.device(device as i32)?;
        // SAFETY: the block has exactly the layout the kernel's trampoline unpacks (checked
        // above) and lives until the launch returns; the placeholder data is held; every
        // other address in it is the caller's, as on the device.
        let r = unsafe { dev.launch(kernel.name(), kernel.entry(), blocks, block.as_mut_ptr()) };
        drop(held);
        let r = r.or_else(|e| match e {
            ascendc_twin::TwinError::Fault(f) => fail(
                ACL_ERROR_RT_VECTOR_CORE_EXCEPTION,
                format!("kernel fault: {f}"),
            ),
            other => fail(ACL_ERROR_RT_INTERNAL_ERROR, other.to_string()),
        });
        if let (true, Err(e)) = (report, &r) {
            eprintln!(
                "[acl-twin] kernel {}: {} (error {})",
                kernel.name(),
                e.msg,
                e.code
            );
        }
        r
    }))
}
