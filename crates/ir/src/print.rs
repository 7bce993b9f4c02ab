//! The `.kir` printer. It emits exactly the syntax [`crate::parse`] reads, so
//! `print(parse(print(f))) == print(f)` for every function.

use crate::func::{Func, Inst, Module};
use crate::op::Op;
use crate::tensor::Tensor;
use std::fmt::Write;

mod control;
mod window;

/// Prints every function of a module, separated by blank lines.
pub fn print_module(m: &Module) -> String {
    m.funcs
        .iter()
        .map(print_func)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Prints one function.
pub fn print_func(f: &Func) -> String {
    print_func_with(f, &literal)
}

/// How a constant's tensor is written (the `.kir` literal, or a digest for a key).
pub type LiteralFn<'a> = &'a dyn Fn(&Tensor) -> String;

/// [`print_func`] with every constant written by `lit`: with a digest of large constants'
/// bits, the text identifies the function (a cache key) without spelling out megabytes of
/// literals, which costs seconds for a frozen graph's weights. Only [`literal`] gives text
/// that parses back.
pub fn print_func_with(f: &Func, lit: LiteralFn<'_>) -> String {
    let mut out = String::new();
    let ret = result_signature(&f.result_types());
    let _ = writeln!(out, "func @{}({}) -> {} {{", f.name, param_list(f), ret);
    for inst in &f.insts {
        let _ = writeln!(out, "  {}", print_inst_with(f, inst, lit));
    }
    let names: Vec<String> = f
        .results
        .iter()
        .map(|&r| format!("%{}", f.value(r).name))
        .collect();
    if names.is_empty() {
        out.push_str("  return\n");
    } else {
        let _ = writeln!(out, "  return {}", names.join(", "));
    }
    out.push_str("}\n");
    out
}

/// `%a: T1, %b: T2`: a function's or region's parameters.
pub(crate) fn param_list(f: &Func) -> String {
    let params: Vec<String> = f
        .params
        .iter()
        .map(|&p| format!("%{}: {}", f.value(p).name, f.ty(p)))
        .collect();
    params.join(", ")
}

/// The `-> T` / `-> (T1, T2)` part of a signature.
pub(crate) fn result_signature(types: &[crate::TensorType]) -> String {
    let shown: Vec<String> = types.iter().map(|t| t.to_string()).collect();
    if shown.len() == 1 {
        shown[0].clone()
    } else {
        format!("({})", shown.join(", "))
    }
}

/// Prints one instruction, without leading indentation or trailing newline. A cluster spans
/// several lines: its region is indented by two more spaces and closed with `}`.
pub fn print_inst(f: &Func, inst: &Inst) -> String {
    print_inst_with(f, inst, &literal)
}

/// [`print_inst`] with constants written by `lit` (see [`print_func_with`]).
pub fn print_inst_with(f: &Func, inst: &Inst, lit: LiteralFn<'_>) -> String {
    print_inst_at(f, inst, lit, 2)
}

/// One instruction that starts on a line indented by `indent` spaces: the lines of its
/// regions, if it has any, are indented further.
fn print_inst_at(f: &Func, inst: &Inst, lit: LiteralFn<'_>, indent: usize) -> String {
    match &inst.op {
        Op::Cluster(c) => return print_cluster(f, inst, c, lit, indent),
        Op::While(_) | Op::Conditional(_) => return control::print_control(f, inst, lit, indent),
        _ => {}
    }
    let mut s = String::new();
    let results: Vec<String> = inst
        .results
        .iter()
        .map(|&r| format!("%{}", f.value(r).name))
        .collect();
    let _ = write!(s, "{} = {}", results.join(", "), inst.op.name());
    let mut parts: Vec<String> = inst
        .args
        .iter()
        .map(|&a| format!("%{}", f.value(a).name))
        .collect();
    parts.extend(attributes(&inst.op, lit));
    if let Some(scope) = inst.scope {
        parts.push(format!("jit_scope={scope}"));
    }
    if !parts.is_empty() {
        s.push(' ');
        s.push_str(&parts.join(", "));
    }
    let types: Vec<String> = inst.results.iter().map(|&r| f.ty(r).to_string()).collect();
    let _ = write!(s, " : {}", types.join(", "));
    s
}

fn print_cluster(
    f: &Func,
    inst: &Inst,
    c: &crate::op::Cluster,
    lit: LiteralFn<'_>,
    indent: usize,
) -> String {
    let name = |v: &crate::Value| format!("%{}", f.value(*v).name);
    let results: Vec<String> = inst.results.iter().map(name).collect();
    let args: Vec<String> = inst.args.iter().map(name).collect();
    let types: Vec<crate::TensorType> = inst.results.iter().map(|&r| f.ty(r).clone()).collect();
    let mut s = format!(
        "{} = cluster @{}({}) -> {} {{\n",
        results.join(", "),
        c.name,
        args.join(", "),
        result_signature(&types)
    );
    print_region_lines(&mut s, &c.body, lit, indent + 2);
    let _ = write!(s, "{:indent$}}}", "");
    s
}

/// A region's instructions and its `yield`, each on a line indented by `indent` spaces.
pub(crate) fn print_region_lines(
    out: &mut String,
    region: &Func,
    lit: LiteralFn<'_>,
    indent: usize,
) {
    for i in &region.insts {
        let _ = writeln!(
            out,
            "{:indent$}{}",
            "",
            print_inst_at(region, i, lit, indent)
        );
    }
    let yields: Vec<String> = region
        .results
        .iter()
        .map(|v| format!("%{}", region.value(*v).name))
        .collect();
    let _ = writeln!(out, "{:indent$}yield {}", "", yields.join(", "));
}

pub(crate) fn list(xs: &[impl ToString]) -> String {
    let items: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// The attribute part of an instruction (`axes=[1]`, `dir=lt`, the literal of a constant).
fn attributes(op: &Op, lit: LiteralFn<'_>) -> Vec<String> {
    match op {
        Op::Constant(t) => vec![lit(t)],
        Op::Iota { dim } => vec![format!("dim={dim}")],
        Op::Compare(dir) => vec![format!("dir={}", dir.name())],
        Op::CompareTotalOrder(dir) => vec![format!("dir={}", dir.name()), "order=total".into()],
        Op::BroadcastInDim { dims } => vec![format!("dims={}", list(dims))],
        Op::Transpose { perm } => vec![format!("perm={}", list(perm))],
        Op::Slice {
            start,
            limit,
            stride,
        } => vec![
            format!("start={}", list(start)),
            format!("limit={}", list(limit)),
            format!("stride={}", list(stride)),
        ],
        Op::Concat { axis } => vec![format!("axis={axis}")],
        Op::Pad { low, high } => vec![format!("low={}", list(low)), format!("high={}", list(high))],
        Op::Reduce { axes, .. } => vec![format!("axes={}", list(axes))],
        Op::Sort {
            dim,
            keys,
            dir,
            order,
            output,
        } => vec![
            format!("dim={dim}"),
            format!("keys={keys}"),
            format!("dir={}", dir.name()),
            format!("order={}", order.name()),
            format!("output={output}"),
        ],
        Op::ArgReduce { axes, output, .. } => {
            vec![format!("axes={}", list(axes)), format!("output={output}")]
        }
        Op::Reverse { dims } => vec![format!("dims={}", list(dims))],
        Op::Cholesky { lower } => vec![format!("lower={lower}")],
        Op::Lu { output } | Op::Geqrf { output } => vec![format!("output={output}")],
        Op::Eigh { lower, output } => vec![format!("lower={lower}"), format!("output={output}")],
        Op::Svd {
            full_matrices,
            output,
        } => vec![
            format!("full_matrices={full_matrices}"),
            format!("output={output}"),
        ],
        Op::TriangularSolve(o) => vec![
            format!("left_side={}", o.left_side),
            format!("lower={}", o.lower),
            format!("unit_diagonal={}", o.unit_diagonal),
            format!("transpose_a={}", o.transpose_a),
        ],
        Op::DynamicSlice { sizes } => vec![format!("sizes={}", list(sizes))],
        Op::PadGeneral {
            low,
            high,
            interior,
        } => vec![
            format!("low={}", list(low)),
            format!("high={}", list(high)),
            format!("interior={}", list(interior)),
        ],
        Op::Gather(d) => d.attributes(),
        Op::Scatter { dims, combine } => {
            let mut v = dims.attributes();
            v.push(format!("combine={}", combine.name()));
            v
        }
        Op::Random { alg, .. } => vec![format!("alg={}", alg.name())],
        Op::Convolution(c) => window::convolution(c),
        Op::ReduceWindow { kind, window: w } => window::reduce_window(*kind, w),
        Op::SelectAndScatter {
            select,
            scatter,
            window: w,
        } => window::select_and_scatter(*select, *scatter, w),
        Op::DotGeneral(d) => [
            ("lhs_batch", &d.lhs_batch),
            ("rhs_batch", &d.rhs_batch),
            ("lhs_contract", &d.lhs_contract),
            ("rhs_contract", &d.rhs_contract),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", list(v)))
        .collect(),
        Op::Unary(_)
        | Op::Binary(_)
        | Op::Select
        | Op::Convert
        | Op::BitcastConvert
        | Op::Reshape
        | Op::Cluster(_)
        | Op::DynamicUpdateSlice
        | Op::While(_)
        | Op::Conditional(_)
        | Op::HouseholderProduct => Vec::new(),
    }
}

/// A constant's literal: one scalar for a splat, nested row-major brackets otherwise.
pub fn literal(t: &Tensor) -> String {
    if t.is_splat() {
        return t.data().get(0).to_string();
    }
    let mut s = String::new();
    nested(t, 0, 0, &mut s);
    s
}

fn nested(t: &Tensor, dim: usize, offset: usize, out: &mut String) {
    if dim == t.shape().len() {
        out.push_str(&t.data().get(offset).to_string());
        return;
    }
    let inner: usize = t.shape()[dim + 1..].iter().product();
    out.push('[');
    for i in 0..t.shape()[dim] {
        if i > 0 {
            out.push_str(", ");
        }
        nested(t, dim + 1, offset + i * inner, out);
    }
    out.push(']');
}
