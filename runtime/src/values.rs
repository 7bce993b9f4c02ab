//! The values of one run of a graph: where each lives (host, device, or both), copies
//! between host and device memory made once and counted, and the [`Placed`] values a
//! caller passes in and gets back.

use crate::backend::{DeviceMemory, DeviceTensor};
use crate::stats::TransferStats;
use crate::RuntimeError;
use kiln_flags::{vlog, Flags};
use kiln_ir::{Func, Tensor, TensorType, Value};
use std::sync::{Arc, Mutex};

/// A graph argument or result: a host tensor, or a tensor in the runtime backend's device
/// memory ([`crate::Runtime::place`], [`crate::Runtime::run_placed`]).
#[derive(Clone)]
pub enum Placed {
    /// On the host.
    Host(Tensor),
    /// In the device's memory.
    Device(Arc<dyn DeviceTensor>),
}

impl Placed {
    /// The value's type.
    pub fn ty(&self) -> TensorType {
        match self {
            Placed::Host(t) => t.ty(),
            Placed::Device(d) => d.ty().clone(),
        }
    }
}

impl std::fmt::Debug for Placed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placed::Host(t) => write!(f, "Host({})", t.ty()),
            Placed::Device(d) => write!(f, "Device({})", d.ty()),
        }
    }
}

/// An argument of one run, as the caller gave it.
pub(crate) enum Arg<'a> {
    /// Borrowed from the caller: read in place, copied if returned.
    Host(&'a Tensor),
    /// Given to the run (a loop's carried value): updated in place at its last use, moved
    /// out if returned.
    Owned(Tensor),
    Device(Arc<dyn DeviceTensor>),
}

impl Arg<'_> {
    /// The argument's type.
    pub(crate) fn ty(&self) -> TensorType {
        match self {
            Arg::Host(t) => t.ty(),
            Arg::Owned(t) => t.ty(),
            Arg::Device(d) => d.ty().clone(),
        }
    }
}

/// One value of the graph being run: on the host, on the device, or both (a device value
/// copied back once keeps its host copy for later host readers, and a host value copied
/// to the device keeps its device copy for later device readers). Freed at its last use.
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) host: Option<Tensor>,
    pub(crate) device: Option<Arc<dyn DeviceTensor>>,
}

impl Slot {
    pub(crate) fn host(t: Tensor) -> Slot {
        Slot {
            host: Some(t),
            device: None,
        }
    }

    pub(crate) fn device(d: Arc<dyn DeviceTensor>) -> Slot {
        Slot {
            host: None,
            device: Some(d),
        }
    }
}

/// The values of one run: host tensors read in place (the caller's arguments, the
/// function's constants) and one [`Slot`] per value (for those, only a device copy).
pub(crate) struct Values<'a> {
    pub(crate) f: &'a Func,
    /// Per value: its host tensor when it is borrowed rather than computed (an argument
    /// given on the host, a constant of `f`).
    pub(crate) borrowed: Vec<Option<&'a Tensor>>,
    pub(crate) slots: Vec<Slot>,
    /// The backend's device memory, when it has its own.
    pub(crate) memory: Option<&'a Arc<dyn DeviceMemory>>,
    /// Where copies are counted.
    pub(crate) transfers: &'a Transfers,
}

impl Values<'_> {
    fn missing(&self, v: Value) -> RuntimeError {
        RuntimeError::Invalid(format!(
            "%{} is used before it is computed",
            self.f.value(v).name
        ))
    }

    fn host_of(&self, v: Value) -> Option<&Tensor> {
        let i = v.0 as usize;
        self.borrowed
            .get(i)
            .copied()
            .flatten()
            .or_else(|| self.slots.get(i)?.host.as_ref())
    }

    /// Stores an instruction's results (`rs`, computed as `outs`), except those never used.
    pub(crate) fn set_results(
        &mut self,
        rs: &[Value],
        uses: &[kiln_interp::LastUse],
        outs: impl IntoIterator<Item = Slot>,
    ) {
        for (&r, t) in rs.iter().zip(outs) {
            if uses[r.0 as usize] != kiln_interp::LastUse::Unused {
                self.slots[r.0 as usize] = t;
            }
        }
    }

    /// `vs` on the host, copying back (once) those that are only on the device.
    pub(crate) fn on_host(&mut self, vs: &[Value]) -> Result<Vec<&Tensor>, RuntimeError> {
        for &v in vs {
            if self.host_of(v).is_some() {
                continue;
            }
            let slot = &self.slots[v.0 as usize];
            let (Some(d), Some(mem)) = (slot.device.clone(), self.memory) else {
                return Err(self.missing(v));
            };
            let t = mem.download(d.as_ref()).map_err(|e| {
                RuntimeError::Invalid(format!(
                    "copying %{} ({}) back from the device failed: {e}",
                    self.f.value(v).name,
                    d.ty()
                ))
            })?;
            self.count(v, d.ty(), false);
            self.slots[v.0 as usize].host = Some(t);
        }
        // Sized once: collecting into a `Result` gives no size hint, and the table then
        // grew by reallocation, several times per operand list (a fifth of a loop
        // iteration's allocator time).
        let mut on = Vec::with_capacity(vs.len());
        for &v in vs {
            on.push(self.host_of(v).ok_or_else(|| self.missing(v))?);
        }
        Ok(on)
    }

    /// `vs` on the device, copying (once) those that are only on the host.
    pub(crate) fn on_device(&mut self, vs: &[Value]) -> Result<Vec<&dyn DeviceTensor>, String> {
        let Some(mem) = self.memory.cloned() else {
            return Err("the backend has no device memory".to_string());
        };
        for &v in vs {
            if self.slots[v.0 as usize].device.is_some() {
                continue;
            }
            let name = &self.f.value(v).name;
            let t = self
                .host_of(v)
                .ok_or_else(|| format!("%{name} is used before it is computed"))?;
            let d = mem
                .upload(t)
                .map_err(|e| format!("copying %{name} ({}) to the device failed: {e}", t.ty()))?;
            self.count(v, d.ty(), true);
            self.slots[v.0 as usize].device = Some(d);
        }
        let on: Vec<&dyn DeviceTensor> = vs
            .iter()
            .filter_map(|&v| self.slots[v.0 as usize].device.as_deref())
            .collect();
        if on.len() != vs.len() {
            return Err("an operand has no device copy".to_string());
        }
        Ok(on)
    }

    fn count(&self, v: Value, ty: &TensorType, up: bool) {
        let what = format!("@{}: %{}", self.f.name, self.f.value(v).name);
        self.transfers.count(&what, ty, up);
    }
}

/// The copies between host and device memory: counted, and logged under
/// `TF_CPP_VMODULE=transfer_manager=2`.
pub(crate) struct Transfers {
    stats: Mutex<TransferStats>,
    flags: Flags,
}

impl Transfers {
    pub(crate) fn new(flags: Flags) -> Transfers {
        Transfers {
            stats: Mutex::new(TransferStats::default()),
            flags,
        }
    }

    /// The copies so far.
    pub(crate) fn stats(&self) -> TransferStats {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one copy of `what` (a graph's value, `@f: %x`, or a placed or fetched value).
    pub(crate) fn count(&self, what: &str, ty: &TensorType, up: bool) {
        let bytes = (ty.num_elements() * ty.dtype.size_bytes()) as u64;
        {
            let mut t = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            if up {
                t.uploads += 1;
                t.upload_bytes += bytes;
            } else {
                t.downloads += 1;
                t.download_bytes += bytes;
            }
        }
        vlog!(
            self.flags,
            "transfer_manager",
            2,
            "{what} ({ty}, {bytes} bytes) {}",
            if up {
                "host -> device"
            } else {
                "device -> host"
            }
        );
    }
}
