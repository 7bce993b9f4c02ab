//! The kernel IR's text form, for `--xla_dump_to`, cache keys and filetests: stable and
//! complete (two programs with equal text compute the same thing), and read back by
//! [`super::parse_program`].

use super::{BufRef, Contraction, DotCall, IExpr, Kernel, NodeKind, Program};
use std::fmt::Write;

/// Prints a whole program.
pub fn print_program(p: &Program) -> String {
    let mut s = String::new();
    let list = |tys: &[kiln_ir::TensorType]| {
        tys.iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(s, "program @{}", p.name);
    let _ = writeln!(s, "  inputs ({})", list(&p.inputs));
    let _ = writeln!(s, "  outputs ({})", list(&p.outputs));
    let _ = writeln!(s, "  temps ({})", list(&p.temps));
    if let Some(rows) = super::row_fusion(p) {
        // The kernels may run row by row (one pass over memory per row); see `row_fusion`.
        let _ = writeln!(s, "  row-fused over {rows} rows");
    }
    for (t, o) in super::shared_temps(p).iter().enumerate() {
        if let Some(o) = o {
            // The scratch buffer may live in the output's storage; see `shared_temps`.
            let _ = writeln!(s, "  tmp{t} shares out{o}");
        }
    }
    for (i, c) in p.consts.iter().enumerate() {
        // Constants print in full: the text is a cache key, so it must distinguish them.
        let items: Vec<String> = (0..c.num_elements())
            .map(|k| c.data().get(k).to_string())
            .collect();
        let _ = writeln!(s, "  const{i} : {} = [{}]", c.ty(), items.join(", "));
    }
    for x in &p.fills {
        let _ = writeln!(
            s,
            "fill out{} = {} {}, alg={} : {}",
            x.out,
            x.dist.name(),
            buf(x.seed),
            x.alg.name(),
            p.outputs[x.out]
        );
    }
    for i in 0..=p.kernels.len() {
        for d in p.dots.iter().filter(|d| d.before == i) {
            let _ = writeln!(s, "{}", contraction(d));
        }
        if let Some(k) = p.kernels.get(i) {
            print_kernel(&mut s, k);
        }
    }
    s
}

/// A `dot` or `conv` line (`parse.rs`'s grammar).
fn contraction(d: &DotCall) -> String {
    fn list<T: ToString>(v: impl IntoIterator<Item = T>) -> String {
        let items: Vec<String> = v.into_iter().map(|x| x.to_string()).collect();
        format!("[{}]", items.join(","))
    }
    let (out, lhs, rhs) = (d.out, buf(d.lhs), buf(d.rhs));
    match &d.op {
        Contraction::Dot(dims) => format!(
            "dot tmp{out} = {lhs}, {rhs}, lhs_batch={}, rhs_batch={}, lhs_contract={}, rhs_contract={}",
            list(&dims.lhs_batch),
            list(&dims.rhs_batch),
            list(&dims.lhs_contract),
            list(&dims.rhs_contract)
        ),
        Contraction::Convolution(c) => {
            let w = |f: fn(&kiln_ir::WindowDim) -> i64| list(c.window.iter().map(f));
            format!(
                "conv tmp{out} = {lhs}, {rhs}, lhs_dims={}, rhs_dims={}, out_dims={}, size={}, stride={}, low={}, high={}, lhs_dilate={}, rhs_dilate={}, reversal={}, feature_groups={}, batch_groups={}",
                list(c.dims.lhs()),
                list(c.dims.rhs()),
                list(c.dims.out()),
                w(|d| d.size as i64),
                w(|d| d.stride as i64),
                w(|d| d.low),
                w(|d| d.high),
                w(|d| d.lhs_dilate as i64),
                w(|d| d.rhs_dilate as i64),
                w(|d| i64::from(d.reversal)),
                c.feature_groups,
                c.batch_groups
            )
        }
    }
}

fn buf(b: BufRef) -> String {
    match b {
        BufRef::Input(i) => format!("in{i}"),
        BufRef::Output(i) => format!("out{i}"),
        BufRef::Temp(i) => format!("tmp{i}"),
        BufRef::Const(i) => format!("const{i}"),
    }
}

fn iexpr(e: &IExpr) -> String {
    match e {
        IExpr::Var(v) => format!("i{v}"),
        IExpr::Const(c) => c.to_string(),
        IExpr::Add(a, b) => format!("({} + {})", iexpr(a), iexpr(b)),
        IExpr::Mul(a, c) => format!("{}*{c}", iexpr(a)),
        IExpr::Div(a, c) => format!("{}/{c}", iexpr(a)),
        IExpr::Rem(a, c) => format!("{}%{c}", iexpr(a)),
        IExpr::Clamp(a, lo, hi) => format!("clamp({}, {lo}, {hi})", iexpr(a)),
        IExpr::Load { buf: b, at, lo, hi } => {
            format!("load({}[{}], {lo}, {hi})", buf(*b), iexpr(at))
        }
    }
}

fn print_kernel(s: &mut String, k: &Kernel) {
    let space: Vec<String> = k.space.iter().map(|d| d.to_string()).collect();
    let _ = write!(s, "kernel @{} space=[{}]", k.name, space.join(","));
    if let Some(r) = &k.reduce {
        let _ = write!(
            s,
            " {}(i{} < {}) of v{}",
            r.kind.name(),
            k.space.len(),
            r.len,
            r.value
        );
    }
    let _ = writeln!(s, " {{");
    for (i, n) in k.nodes.iter().enumerate() {
        let body = match &n.kind {
            NodeKind::Load { buf: b, offset } => format!("load {}[{}]", buf(*b), iexpr(offset)),
            NodeKind::Const(bits) => format!("const {bits:#x}"),
            NodeKind::Index(e) => format!("index {}", iexpr(e)),
            NodeKind::InRange { e, lo, hi } => format!("in_range {}, {lo}, {hi}", iexpr(e)),
            NodeKind::Unary(u, a) => format!("{} v{a}", u.name()),
            NodeKind::Binary(b, x, y) => format!("{} v{x}, v{y}", b.name()),
            NodeKind::Compare(d, x, y) => format!("compare v{x}, v{y}, dir={}", d.name()),
            NodeKind::Select(p, x, y) => format!("select v{p}, v{x}, v{y}"),
            NodeKind::Convert(a) => format!("convert v{a}"),
            NodeKind::ReduceResult => "reduce_result".to_string(),
            NodeKind::Random {
                dist,
                alg,
                seed,
                index,
            } => format!(
                "{} seed=({}), alg={}, at {}",
                dist.name(),
                seed.iter()
                    .map(|v| format!("v{v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                alg.name(),
                iexpr(index)
            ),
        };
        let _ = writeln!(s, "  v{i} = {body} : {}", n.dtype);
    }
    for st in &k.stores {
        let _ = writeln!(s, "  store {}, v{}", buf(st.buf), st.value);
    }
    let _ = writeln!(s, "}}");
}
