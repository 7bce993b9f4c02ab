//! Device memory: host buffers as device bytes and back, and the executor's view of the
//! GPU's memory ([`GpuMemory`], [`GpuTensor`]): copies on the backend's one stream.

use crate::backend::{DeviceMemory, DeviceTensor};
use kiln_ir::{Buffer, DType, Tensor, TensorType};
use kiln_ptx::driver::{DeviceBuffer, DriverError, Gpu};
use std::sync::Arc;

/// A driver error as the runtime's error text.
pub(super) fn drv(e: DriverError) -> String {
    e.to_string()
}

/// Bytes of a tensor of type `t` on the device (bool: one byte per element).
pub(super) fn type_bytes(t: &TensorType) -> usize {
    t.shape.iter().product::<usize>() * t.dtype.size_bytes()
}

/// A host buffer as device bytes (native endianness; bool as 0/1 bytes).
pub fn buffer_bytes(b: &Buffer) -> Vec<u8> {
    match b {
        Buffer::F32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::F64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::I32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::I64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::U32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::U64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::I8(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::U8(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::I16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::U16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::F16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::Bf16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
    }
}

/// Device bytes back into a host buffer of `dt` (the inverse of [`buffer_bytes`]; a
/// nonzero bool byte is `true`).
pub fn buffer_from_bytes(dt: DType, bytes: &[u8]) -> Buffer {
    fn words<const N: usize, T>(bytes: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
        bytes
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                f(a)
            })
            .collect()
    }
    match dt {
        DType::F32 => Buffer::F32(words(bytes, f32::from_ne_bytes).into()),
        DType::F64 => Buffer::F64(words(bytes, f64::from_ne_bytes).into()),
        DType::I32 => Buffer::I32(words(bytes, i32::from_ne_bytes).into()),
        DType::I64 => Buffer::I64(words(bytes, i64::from_ne_bytes).into()),
        DType::U32 => Buffer::U32(words(bytes, u32::from_ne_bytes).into()),
        DType::U64 => Buffer::U64(words(bytes, u64::from_ne_bytes).into()),
        DType::I8 => Buffer::I8(words(bytes, i8::from_ne_bytes).into()),
        DType::U8 => Buffer::U8(bytes.to_vec().into()),
        DType::I16 => Buffer::I16(words(bytes, i16::from_ne_bytes).into()),
        DType::U16 => Buffer::U16(words(bytes, u16::from_ne_bytes).into()),
        DType::F16 => Buffer::F16(words(bytes, kiln_ir::f16::from_ne_bytes).into()),
        DType::Bf16 => Buffer::Bf16(words(bytes, kiln_ir::bf16::from_ne_bytes).into()),
        DType::Bool => Buffer::Bool(bytes.iter().map(|&b| b != 0).collect()),
    }
}

/// A tensor in the GPU's memory.
pub(super) struct GpuTensor {
    pub(super) ty: TensorType,
    pub(super) buf: DeviceBuffer,
}

impl GpuTensor {
    pub(super) fn of(d: &dyn DeviceTensor) -> Result<&GpuTensor, String> {
        d.as_any()
            .downcast_ref::<GpuTensor>()
            .ok_or_else(|| format!("a {} value is not in this GPU's memory", d.ty()))
    }
}

impl DeviceTensor for GpuTensor {
    fn ty(&self) -> &TensorType {
        &self.ty
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The GPU's memory as the executor sees it: copies on the backend's one stream, so they
/// are ordered with the kernels that read and write the buffers.
pub(super) struct GpuMemory {
    pub(super) gpu: Arc<Gpu>,
}

impl GpuMemory {
    pub(super) fn upload_tensor(&self, t: &Tensor) -> Result<GpuTensor, String> {
        Ok(GpuTensor {
            ty: t.ty(),
            buf: self.gpu.upload(&buffer_bytes(t.data())).map_err(drv)?,
        })
    }

    pub(super) fn download_tensor(&self, d: &GpuTensor) -> Result<Tensor, String> {
        let mut host = vec![0u8; type_bytes(&d.ty)];
        self.gpu.download(&d.buf, &mut host).map_err(drv)?;
        self.gpu.synchronize().map_err(drv)?;
        Tensor::new(d.ty.shape.clone(), buffer_from_bytes(d.ty.dtype, &host))
            .map_err(|e| e.to_string())
    }
}

impl DeviceMemory for GpuMemory {
    fn upload(&self, t: &Tensor) -> Result<Arc<dyn DeviceTensor>, String> {
        Ok(Arc::new(self.upload_tensor(t)?))
    }
    fn download(&self, d: &dyn DeviceTensor) -> Result<Tensor, String> {
        self.download_tensor(GpuTensor::of(d)?)
    }
    fn synchronize(&self) -> Result<(), String> {
        self.gpu.synchronize().map_err(drv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_bytes_round_trip() {
        let bufs = [
            Buffer::F32(vec![1.5, -0.0, f32::NAN, f32::INFINITY].into()),
            Buffer::F64(vec![1e300, -2.5].into()),
            Buffer::I32(vec![i32::MIN, 7].into()),
            Buffer::I64(vec![i64::MAX, -1].into()),
            Buffer::U32(vec![u32::MAX, 0].into()),
            Buffer::Bool(vec![true, false, true].into()),
        ];
        for b in bufs {
            let bytes = buffer_bytes(&b);
            assert_eq!(bytes.len(), b.len() * b.dtype().size_bytes());
            let back = buffer_from_bytes(b.dtype(), &bytes);
            let (x, y) = (
                Tensor::new(vec![b.len()], b).unwrap(),
                Tensor::new(vec![back.len()], back).unwrap(),
            );
            assert!(x.bit_eq(&y));
        }
    }
}
