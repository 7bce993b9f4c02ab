//! The host sum ([`super::HostCalls::sum`]): a float sum's accumulation in the
//! interpreter's canonical-order loop (`kiln_interp::sum_row`, `kiln_interp::sum_into_lanes`)
//! instead of the emitted four-lane one — the same order, so the same bits. What it sums is
//! the plan's decision (`crate::cranelift::plan::HostSum`); `code` says which form.

use crate::kernel::Kernel;
use kiln_ir::{DType, ReduceKind};
use kiln_math::float16::Half;

/// The forms of [`kiln_sum`], by `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum SumCode {
    /// The canonical sum of `n` `f32`s at `src`.
    F32Row = 0,
    /// ... of the exact widenings of `n` `bf16`s at `src`.
    Bf16Row = 1,
    /// ... of the exact widenings of `n` `f16`s at `src`.
    F16Row = 2,
    /// ... of `(x - c) * (x - c)` over `n` `f32`s `x` at `src`.
    ShiftedSquare = 3,
    /// `acc[i mod 32] += src[i]` over `n` `f32`s (a window of a canonical sum); returns 0.
    IntoLanes = 4,
    /// ... of `(x - c) * (x - c)` over the exact widenings `x` of `n` `bf16`s at `src`.
    Bf16ShiftedSquare = 5,
    /// ... of the same over `f16`s.
    F16ShiftedSquare = 6,
    /// ... of `round(round(x - c)²)` over `n` `bf16`s `x` at `src`, each op's result
    /// rounded to `bf16`.
    Bf16RoundedShiftedSquare = 7,
    /// ... of the same over `f16`s, rounded to `f16`.
    F16RoundedShiftedSquare = 8,
    /// ... of `round(x - c)²` over `n` `bf16`s `x` at `src`: the difference rounded to
    /// `bf16`, the square `f32`.
    Bf16DifferenceRoundedShiftedSquare = 9,
    /// ... of the same over `f16`s, the difference rounded to `f16`.
    F16DifferenceRoundedShiftedSquare = 10,
}

impl SumCode {
    /// Every form, in code order.
    const ALL: [SumCode; 11] = [
        SumCode::F32Row,
        SumCode::Bf16Row,
        SumCode::F16Row,
        SumCode::ShiftedSquare,
        SumCode::IntoLanes,
        SumCode::Bf16ShiftedSquare,
        SumCode::F16ShiftedSquare,
        SumCode::Bf16RoundedShiftedSquare,
        SumCode::F16RoundedShiftedSquare,
        SumCode::Bf16DifferenceRoundedShiftedSquare,
        SumCode::F16DifferenceRoundedShiftedSquare,
    ];

    /// The row form for a load of dtype `dt`.
    pub fn row(dt: DType) -> Option<SumCode> {
        match dt {
            DType::F32 => Some(SumCode::F32Row),
            DType::Bf16 => Some(SumCode::Bf16Row),
            DType::F16 => Some(SumCode::F16Row),
            _ => None,
        }
    }

    /// The shifted-square form for a load of dtype `dt`, the difference rounded to `round`
    /// and the square too when `square_rounded`.
    pub fn shifted_square(dt: DType, round: Option<Half>, square_rounded: bool) -> Option<SumCode> {
        match (dt, round, square_rounded) {
            (DType::F32, None, _) => Some(SumCode::ShiftedSquare),
            (DType::Bf16, None, _) => Some(SumCode::Bf16ShiftedSquare),
            (DType::F16, None, _) => Some(SumCode::F16ShiftedSquare),
            (DType::Bf16, Some(Half::Bf16), true) => Some(SumCode::Bf16RoundedShiftedSquare),
            (DType::F16, Some(Half::F16), true) => Some(SumCode::F16RoundedShiftedSquare),
            (DType::Bf16, Some(Half::Bf16), false) => {
                Some(SumCode::Bf16DifferenceRoundedShiftedSquare)
            }
            (DType::F16, Some(Half::F16), false) => {
                Some(SumCode::F16DifferenceRoundedShiftedSquare)
            }
            _ => None,
        }
    }
}

/// Whether kernel `k`'s reduction is a float sum a host sum may compute (the plan decides
/// whether its summand has a form the call takes).
pub fn kernel_has_host_sum(k: &Kernel) -> bool {
    k.reduce.as_ref().is_some_and(|r| {
        r.kind == ReduceKind::Sum
            && r.len >= crate::cranelift::plan::HOST_SUM_MIN_LEN
            && k.nodes.get(r.value).is_some_and(|n| n.dtype == DType::F32)
    })
}

/// [`super::HostCalls::sum`]: `code` a [`SumCode`]; `c` the shifted square's value; `acc`
/// the 32 lanes of [`SumCode::IntoLanes`] (null otherwise). NaN for an unknown code.
pub(super) extern "C" fn kiln_sum<const W512: bool>(
    code: u32,
    src: *const u8,
    c: f32,
    acc: *mut f32,
    n: i64,
) -> f32 {
    super::at_width::<W512, _>(|| sum(code, src, c, acc, n)).unwrap_or(f32::NAN)
}

fn sum(code: u32, src: *const u8, c: f32, acc: *mut f32, n: i64) -> Option<f32> {
    use kiln_interp::{sum_row, SquareRounding, SumRow};
    let n = usize::try_from(n).unwrap_or(0);
    let n = if src.is_null() { 0 } else { n };
    // SAFETY: the emitted caller passes `n` valid elements of the code's type at `src`
    // (one row of a buffer, or a staged block), suitably aligned.
    let f32s = || unsafe { slice(src.cast::<f32>(), n) };
    let u16s = || unsafe { slice(src.cast::<u16>(), n) };
    let code = SumCode::ALL.into_iter().find(|&s| s as u32 == code)?;
    Some(match code {
        SumCode::F32Row => sum_row(SumRow::F32(f32s())),
        SumCode::Bf16Row => sum_row(SumRow::Half(Half::Bf16, u16s())),
        SumCode::F16Row => sum_row(SumRow::Half(Half::F16, u16s())),
        SumCode::ShiftedSquare => sum_row(SumRow::ShiftedSquare(f32s(), c)),
        SumCode::Bf16ShiftedSquare
        | SumCode::F16ShiftedSquare
        | SumCode::Bf16RoundedShiftedSquare
        | SumCode::F16RoundedShiftedSquare
        | SumCode::Bf16DifferenceRoundedShiftedSquare
        | SumCode::F16DifferenceRoundedShiftedSquare => {
            let h = match code {
                SumCode::Bf16ShiftedSquare
                | SumCode::Bf16RoundedShiftedSquare
                | SumCode::Bf16DifferenceRoundedShiftedSquare => Half::Bf16,
                _ => Half::F16,
            };
            let rounded = match code {
                SumCode::Bf16RoundedShiftedSquare | SumCode::F16RoundedShiftedSquare => {
                    SquareRounding::Both
                }
                SumCode::Bf16DifferenceRoundedShiftedSquare
                | SumCode::F16DifferenceRoundedShiftedSquare => SquareRounding::Difference,
                _ => SquareRounding::Neither,
            };
            sum_row(SumRow::HalfShiftedSquare {
                h,
                xs: u16s(),
                c,
                rounded,
            })
        }
        SumCode::IntoLanes if !acc.is_null() => {
            // SAFETY: `acc` is the caller's block of 32 `f32` lane accumulators, apart from
            // `src`.
            let lanes = unsafe { &mut *acc.cast::<[f32; kiln_interp::reduce::LANES]>() };
            kiln_interp::sum_into_lanes(lanes, f32s());
            0.0
        }
        SumCode::IntoLanes => return None,
    })
}

/// `n` elements at `p` (empty for `n == 0`, whatever `p`).
///
/// # Safety
/// For `n > 0`, `p` points to `n` valid, aligned elements.
unsafe fn slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The code of a row of `h`s.
    fn half_code(h: Half) -> SumCode {
        match h {
            Half::Bf16 => SumCode::Bf16Row,
            Half::F16 => SumCode::F16Row,
        }
    }

    #[test]
    fn every_code_reaches_its_sum() {
        // A row sum through the host function: `code` over `n` elements at `src`.
        let row = |code: SumCode, src: *const u8, c: f32, n: i64| {
            kiln_sum::<false>(code as u32, src, c, std::ptr::null_mut(), n)
        };
        let xs: Vec<f32> = (0..300).map(|i| (i as f32 * 0.37).sin()).collect();
        let want = kiln_interp::sum_row(kiln_interp::SumRow::F32(&xs));
        let got = row(SumCode::F32Row, xs.as_ptr().cast(), 0.0, 300);
        assert_eq!(got.to_bits(), want.to_bits());
        let sq = row(SumCode::ShiftedSquare, xs.as_ptr().cast(), 0.5, 300);
        let want = kiln_interp::sum_row(kiln_interp::SumRow::ShiftedSquare(&xs, 0.5));
        assert_eq!(sq.to_bits(), want.to_bits());
        for h in [Half::Bf16, Half::F16] {
            let bits: Vec<u16> = (0..300u16).map(|i| i.wrapping_mul(97) & 0x3bff).collect();
            let want = kiln_interp::sum_row(kiln_interp::SumRow::Half(h, &bits));
            let got = kiln_sum::<true>(
                half_code(h) as u32,
                bits.as_ptr().cast(),
                0.0,
                std::ptr::null_mut(),
                300,
            );
            assert_eq!(got.to_bits(), want.to_bits(), "{h:?}");
            // Its shifted squares, without the roundings, with each op's, with the
            // difference's only.
            use kiln_interp::SquareRounding;
            for rounded in [
                SquareRounding::Neither,
                SquareRounding::Both,
                SquareRounding::Difference,
            ] {
                let code = SumCode::shifted_square(
                    match h {
                        Half::Bf16 => DType::Bf16,
                        Half::F16 => DType::F16,
                    },
                    rounded.difference().then_some(h),
                    rounded.square(),
                )
                .expect("a 16-bit shifted square");
                let row = kiln_interp::SumRow::HalfShiftedSquare {
                    h,
                    xs: &bits,
                    c: 0.75,
                    rounded,
                };
                let want = kiln_interp::sum_row(row);
                let got = kiln_sum::<false>(
                    code as u32,
                    bits.as_ptr().cast(),
                    0.75,
                    std::ptr::null_mut(),
                    300,
                );
                assert_eq!(got.to_bits(), want.to_bits(), "{h:?} {rounded:?}");
            }
        }
        // No form rounds to a format other than its row's, or an f32 row.
        for square in [false, true] {
            assert_eq!(
                SumCode::shifted_square(DType::Bf16, Some(Half::F16), square),
                None
            );
            assert_eq!(
                SumCode::shifted_square(DType::F32, Some(Half::Bf16), square),
                None
            );
        }
        let mut acc = [1.0f32; 32];
        let r = kiln_sum::<false>(
            SumCode::IntoLanes as u32,
            xs.as_ptr().cast(),
            0.0,
            acc.as_mut_ptr(),
            64,
        );
        assert_eq!(r, 0.0);
        assert_eq!(acc[3].to_bits(), (1.0 + xs[3] + xs[35]).to_bits());
        // Unknown codes and empty rows.
        assert!(kiln_sum::<false>(11, xs.as_ptr().cast(), 0.0, std::ptr::null_mut(), 3).is_nan());
        assert!(kiln_sum::<false>(4, xs.as_ptr().cast(), 0.0, std::ptr::null_mut(), 3).is_nan());
        assert_eq!(
            kiln_sum::<false>(0, std::ptr::null(), 0.0, std::ptr::null_mut(), 0),
            0.0
        );
    }
}
