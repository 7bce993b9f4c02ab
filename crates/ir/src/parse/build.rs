//! Turning a parsed instruction (op name, operands, attributes, declared type) into an
//! [`Op`]: which attributes each op takes, and their values' kinds.

use super::literal::{tensor_from_literal, Lit};
use super::PResult;
use crate::dtype::TensorType;
use crate::func::{Loc, Value};
use crate::op::{
    ArgKind, BinaryOp, CompareDir, DotDims, Op, RandomAlg, RandomDist, ReduceKind, SortOrder,
    UnaryOp,
};
use std::collections::HashMap;

mod indexing;
mod window;

/// An attribute value or literal as written, before its meaning is known.
#[derive(Debug, Clone)]
pub(super) enum Item {
    Value(Value),
    Attr(String, AttrVal, Loc),
    Literal(Lit, Loc),
}

#[derive(Debug, Clone)]
pub(super) enum AttrVal {
    Int(usize),
    Word(String),
    /// A list of integers as written, each with its place.
    List(Vec<(String, Loc)>),
}

/// Turns an op name, its operands/attributes and the declared type into an [`Op`].
pub(super) fn build_op(
    name: &str,
    loc: Loc,
    items: Vec<Item>,
    ty: &TensorType,
) -> PResult<(Vec<Value>, Op, Option<u32>)> {
    let mut args = Vec::new();
    let mut attrs: HashMap<String, (AttrVal, Loc)> = HashMap::new();
    let mut literal = None;
    for item in items {
        match item {
            Item::Value(v) => args.push(v),
            Item::Attr(k, v, l) => {
                if attrs.insert(k.clone(), (v, l)).is_some() {
                    return Err((l, format!("attribute '{k}' is given twice")));
                }
            }
            Item::Literal(lit, l) => {
                if name != "constant" || literal.is_some() {
                    return Err((l, format!("'{name}' takes no literal here")));
                }
                literal = Some(lit);
            }
        }
    }
    let mut a = Attrs {
        op: name,
        attrs,
        loc,
    };
    // `jit_scope` is accepted on every op (manual clustering).
    let scope = if a.attrs.contains_key("jit_scope") {
        let n = a.int("jit_scope")?;
        Some(u32::try_from(n).map_err(|_| (loc, format!("jit_scope={n} is too large")))?)
    } else {
        None
    };
    let op = if let Some(u) = UnaryOp::from_name(name) {
        Op::Unary(u)
    } else if let Some(b) = BinaryOp::from_name(name) {
        Op::Binary(b)
    } else if let Some(dist) = RandomDist::from_name(name) {
        let (w, l) = a.word("alg")?;
        let alg = RandomAlg::from_name(&w).ok_or_else(|| {
            (
                l,
                format!(
                    "unknown generator 'alg={w}' (expected {})",
                    RandomAlg::ALL
                        .iter()
                        .map(|a| a.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        Op::Random { dist, alg }
    } else if let Some(kind) = ArgKind::from_name(name) {
        Op::ArgReduce {
            kind,
            axes: a.list("axes")?,
            output: a.int("output")?,
        }
    } else if let Some(kind) = ReduceKind::from_name(name) {
        Op::Reduce {
            kind,
            axes: a.list("axes")?,
        }
    } else {
        match name {
            "constant" => {
                let lit = literal.ok_or((
                    loc,
                    "constant needs a literal, e.g. 'constant 1.5 : f32[]'".to_string(),
                ))?;
                Op::Constant(tensor_from_literal(&lit, ty)?.into())
            }
            "iota" => Op::Iota { dim: a.int("dim")? },
            "compare" => {
                let (w, l) = a.word("dir")?;
                let dir = CompareDir::from_name(&w).ok_or_else(|| {
                    (
                        l,
                        format!(
                            "unknown comparison 'dir={w}' (expected one of lt, le, gt, ge, eq, ne)"
                        ),
                    )
                })?;
                match a.opt_word("order")? {
                    None => Op::Compare(dir),
                    Some((o, _)) if o == "total" => Op::CompareTotalOrder(dir),
                    Some((o, l)) => {
                        return Err((l, format!("unknown 'order={o}' (expected order=total)")))
                    }
                }
            }
            "select" => Op::Select,
            "convert" => Op::Convert,
            "bitcast_convert" => Op::BitcastConvert,
            "sort" => {
                let (w, l) = a.word("dir")?;
                let dir = CompareDir::from_name(&w)
                    .ok_or_else(|| (l, format!("unknown 'dir={w}' (expected lt or gt)")))?;
                let (w, l) = a.word("order")?;
                let order = SortOrder::from_name(&w).ok_or_else(|| {
                    (
                        l,
                        format!("unknown 'order={w}' (expected ieee, total or canonical)"),
                    )
                })?;
                Op::Sort {
                    dim: a.int("dim")?,
                    keys: a.int("keys")?,
                    dir,
                    order,
                    output: a.int("output")?,
                }
            }
            "cholesky" => Op::Cholesky {
                lower: a.flag("lower")?,
            },
            "lu" => Op::Lu {
                output: a.int("output")?,
            },
            "geqrf" => Op::Geqrf {
                output: a.int("output")?,
            },
            "householder_product" => Op::HouseholderProduct,
            "eigh" => Op::Eigh {
                lower: a.flag("lower")?,
                output: a.int("output")?,
            },
            "svd" => Op::Svd {
                full_matrices: a.flag("full_matrices")?,
                output: a.int("output")?,
            },
            "triangular_solve" => Op::TriangularSolve(crate::TriangularSolve {
                left_side: a.flag("left_side")?,
                lower: a.flag("lower")?,
                unit_diagonal: a.flag("unit_diagonal")?,
                transpose_a: a.flag("transpose_a")?,
            }),
            "reshape" => Op::Reshape,
            "broadcast_in_dim" => Op::BroadcastInDim {
                dims: a.list("dims")?,
            },
            "transpose" => Op::Transpose {
                perm: a.list("perm")?,
            },
            "slice" => {
                let start = a.list("start")?;
                let limit = a.list("limit")?;
                let stride = a
                    .opt_list("stride")?
                    .unwrap_or_else(|| vec![1; start.len()]);
                Op::Slice {
                    start,
                    limit,
                    stride,
                }
            }
            "concat" => Op::Concat {
                axis: a.int("axis")?,
            },
            // `interior` or a negative edge: XLA's general pad; else the plain one.
            "pad" => {
                let low = a.signed_list("low")?;
                let high = a.signed_list("high")?;
                match a.opt_list("interior")? {
                    Some(interior) => Op::PadGeneral {
                        low,
                        high,
                        interior,
                    },
                    None => {
                        let interior = vec![0; low.len()];
                        Op::pad(low, high, interior)
                    }
                }
            }
            "reverse" => Op::Reverse {
                dims: a.list("dims")?,
            },
            "dynamic_slice" => Op::DynamicSlice {
                sizes: a.list("sizes")?,
            },
            "dynamic_update_slice" => Op::DynamicUpdateSlice,
            "convolution" => window::convolution(&mut a)?,
            "reduce_window" => window::reduce_window(&mut a)?,
            "select_and_scatter" => window::select_and_scatter(&mut a)?,
            "gather" => indexing::gather(&mut a)?,
            "scatter" => indexing::scatter(&mut a)?,
            "dot_general" => Op::DotGeneral(DotDims {
                lhs_batch: a.opt_list("lhs_batch")?.unwrap_or_default(),
                rhs_batch: a.opt_list("rhs_batch")?.unwrap_or_default(),
                lhs_contract: a.opt_list("lhs_contract")?.unwrap_or_default(),
                rhs_contract: a.opt_list("rhs_contract")?.unwrap_or_default(),
            }),
            other => return Err((loc, format!("unknown op '{other}'"))),
        }
    };
    if let Some((k, (_, l))) = a.attrs.iter().next() {
        return Err((*l, format!("'{name}' has no attribute '{k}'")));
    }
    Ok((args, op, scope))
}

struct Attrs<'a> {
    op: &'a str,
    attrs: HashMap<String, (AttrVal, Loc)>,
    loc: Loc,
}

impl Attrs<'_> {
    fn take(&mut self, key: &str) -> PResult<(AttrVal, Loc)> {
        self.attrs.remove(key).ok_or_else(|| {
            (
                self.loc,
                format!("'{}' needs the attribute '{key}'", self.op),
            )
        })
    }
    fn list(&mut self, key: &str) -> PResult<Vec<usize>> {
        match self.take(key)? {
            (AttrVal::List(v), _) => v
                .into_iter()
                .map(|(n, l)| {
                    n.parse()
                        .map_err(|_| (l, format!("expected a non-negative integer, found '{n}'")))
                })
                .collect(),
            (_, l) => Err((l, format!("attribute '{key}' must be a list like [0, 1]"))),
        }
    }
    /// A list whose entries may be negative (`pad`'s `low` and `high`).
    fn signed_list(&mut self, key: &str) -> PResult<Vec<i64>> {
        match self.take(key)? {
            (AttrVal::List(v), _) => v
                .into_iter()
                .map(|(n, l)| {
                    n.parse()
                        .map_err(|_| (l, format!("expected an integer, found '{n}'")))
                })
                .collect(),
            (_, l) => Err((l, format!("attribute '{key}' must be a list like [0, -1]"))),
        }
    }
    fn opt_list(&mut self, key: &str) -> PResult<Option<Vec<usize>>> {
        if self.attrs.contains_key(key) {
            self.list(key).map(Some)
        } else {
            Ok(None)
        }
    }
    fn int(&mut self, key: &str) -> PResult<usize> {
        match self.take(key)? {
            (AttrVal::Int(v), _) => Ok(v),
            (_, l) => Err((
                l,
                format!("attribute '{key}' must be a non-negative integer"),
            )),
        }
    }
    /// `key=true` or `key=false`.
    fn flag(&mut self, key: &str) -> PResult<bool> {
        match self.word(key)? {
            (w, _) if w == "true" => Ok(true),
            (w, _) if w == "false" => Ok(false),
            (w, l) => Err((l, format!("'{key}={w}' must be true or false"))),
        }
    }

    fn word(&mut self, key: &str) -> PResult<(String, Loc)> {
        match self.take(key)? {
            (AttrVal::Word(w), l) => Ok((w, l)),
            (_, l) => Err((l, format!("attribute '{key}' must be a word"))),
        }
    }
    fn opt_word(&mut self, key: &str) -> PResult<Option<(String, Loc)>> {
        if self.attrs.contains_key(key) {
            self.word(key).map(Some)
        } else {
            Ok(None)
        }
    }
}
