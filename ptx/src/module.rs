//! A small, table-driven builder for PTX module text.
//!
//! A [`Kernel`] is a name, `.u64` parameters and a [`Body`]: a list of instruction lines over
//! typed virtual registers that the body numbers per [`RegClass`] and declares in bulk
//! (`.reg .f32 %f<12>;`); `ptxas` does the register allocation. [`emit_module`] prints the
//! target directives ([`Target`], from a table of compute capabilities) and the kernels.
//!
//! Deliberately not here: anything that decides *which* instructions to emit (that is
//! [`crate::arith`] and the kernel generators) and any optimisation — ptxas optimises.

use std::fmt::{self, Display, Write as _};

/// Errors of the pure PTX text emitters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PtxError {
    /// The requested compute capability has no entry in the target table.
    #[error("unsupported GPU target sm_{sm}: {reason}")]
    UnsupportedTarget {
        /// The requested compute capability, e.g. `80` for sm_80.
        sm: u32,
        /// Why it is refused, naming the supported targets.
        reason: String,
    },
}

/// A compilation target: a compute capability and the PTX ISA version its text declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// Compute capability as `major * 10 + minor`, e.g. `80` for sm_80.
    pub sm: u32,
    /// The `.version` directive, `(major, minor)`: the lowest PTX ISA that knows `sm`.
    pub ptx_version: (u32, u32),
}

/// Supported targets and the lowest PTX ISA version that supports each (PTX ISA manual,
/// "Release notes"). sm_80 is the floor: `min.NaN`/`max.NaN` need it.
const TARGETS: &[(u32, (u32, u32))] = &[
    (80, (7, 0)),
    (86, (7, 1)),
    (87, (7, 4)),
    (89, (7, 8)),
    (90, (7, 8)),
    (100, (8, 6)),
    (120, (8, 7)),
];

impl Target {
    /// The target for compute capability `sm` (`80` = sm_80), or an error naming the
    /// supported ones.
    pub fn from_sm(sm: u32) -> Result<Target, PtxError> {
        TARGETS
            .iter()
            .find(|(s, _)| *s == sm)
            .map(|&(sm, ptx_version)| Target { sm, ptx_version })
            .ok_or_else(|| PtxError::UnsupportedTarget {
                sm,
                reason: format!(
                    "supported: {}",
                    TARGETS
                        .iter()
                        .map(|(s, _)| format!("sm_{s}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }

    /// Every target in the table, lowest first.
    pub fn all() -> impl Iterator<Item = Target> {
        TARGETS
            .iter()
            .map(|&(sm, ptx_version)| Target { sm, ptx_version })
    }
}

/// A class of virtual registers: one PTX type, one name prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegClass {
    /// `.pred` (`%p`): a predicate, from `setp`.
    Pred,
    /// `.b32` (`%r`): 32-bit integers and f32 bit patterns.
    B32,
    /// `.b64` (`%rd`): 64-bit integers, addresses and f64 bit patterns.
    B64,
    /// `.f32` (`%f`).
    F32,
    /// `.f64` (`%fd`).
    F64,
}

/// Each class's declaration type and name prefix, in declaration order.
const REG_CLASSES: [(RegClass, &str, &str); 5] = [
    (RegClass::Pred, ".pred", "%p"),
    (RegClass::B32, ".b32", "%r"),
    (RegClass::B64, ".b64", "%rd"),
    (RegClass::F32, ".f32", "%f"),
    (RegClass::F64, ".f64", "%fd"),
];

impl RegClass {
    fn slot(self) -> usize {
        REG_CLASSES
            .iter()
            .position(|(c, _, _)| *c == self)
            .expect("every class is in the table")
    }
    fn prefix(self) -> &'static str {
        REG_CLASSES[self.slot()].2
    }
}

/// A virtual register, printed as `%f3`, `%rd12`, …
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reg {
    /// Its class (PTX type).
    pub class: RegClass,
    /// Its number within the class.
    pub index: u32,
}

impl Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.class.prefix(), self.index)
    }
}

/// A branch target, printed as `$L_loop_0`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Label(String);

impl Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A kernel body under construction: instruction lines plus register and label counters.
#[derive(Debug, Default, Clone)]
pub struct Body {
    lines: Vec<String>,
    regs: [u32; REG_CLASSES.len()],
    labels: u32,
}

impl Body {
    /// An empty body.
    pub fn new() -> Body {
        Body::default()
    }

    /// A fresh register of `class`.
    pub fn reg(&mut self, class: RegClass) -> Reg {
        let n = &mut self.regs[class.slot()];
        *n += 1;
        Reg { class, index: *n }
    }

    /// Appends `opcode op0, op1, …;`.
    pub fn emit(&mut self, opcode: &str, operands: &[&dyn Display]) {
        let mut line = format!("\t{opcode}");
        for (i, op) in operands.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(line, "{sep}{op}").expect("writing to a String");
        }
        line.push(';');
        self.lines.push(line);
    }

    /// Appends `opcode d, srcs…;` into a fresh register `d` of `class` and returns `d`.
    pub fn def(&mut self, class: RegClass, opcode: &str, srcs: &[&dyn Display]) -> Reg {
        let d = self.reg(class);
        let mut ops: Vec<&dyn Display> = vec![&d];
        ops.extend_from_slice(srcs);
        self.emit(opcode, &ops);
        d
    }

    /// A fresh label; `stem` makes the text readable.
    pub fn label(&mut self, stem: &str) -> Label {
        self.labels += 1;
        Label(format!("$L_{stem}_{}", self.labels - 1))
    }

    /// Places `label` at the current position.
    pub fn place(&mut self, label: &Label) {
        self.lines.push(format!("{label}:"));
    }

    /// Appends a declaration or directive line `text;` (e.g. a kernel-scope `.shared`
    /// array), emitted where it is placed; put declarations before any instruction.
    pub fn directive(&mut self, text: &str) {
        self.lines.push(format!("\t{text};"));
    }

    /// Appends a `// text` comment line.
    pub fn comment(&mut self, text: &str) {
        self.lines.push(format!("\t// {text}"));
    }

    /// Loads the `.u64` pointer parameter `name` and converts it to a global address.
    pub fn global_pointer_param(&mut self, name: &str) -> Reg {
        let generic = self.def(RegClass::B64, "ld.param.u64", &[&format!("[{name}]")]);
        self.def(RegClass::B64, "cvta.to.global.u64", &[&generic])
    }

    /// Loads the `.u64` scalar parameter `name`.
    pub fn u64_param(&mut self, name: &str) -> Reg {
        self.def(RegClass::B64, "ld.param.u64", &[&format!("[{name}]")])
    }

    /// `base + index * elem_bytes` in 64-bit arithmetic (`elem_bytes` a power of two).
    pub fn element_address(&mut self, base: Reg, index: Reg, elem_bytes: u32) -> Reg {
        debug_assert!(elem_bytes.is_power_of_two());
        let offset = self.def(
            RegClass::B64,
            "shl.b64",
            &[&index, &elem_bytes.trailing_zeros()],
        );
        self.def(RegClass::B64, "add.s64", &[&base, &offset])
    }

    /// A grid-stride loop over `0..n` (`n` a `.b64` register): calls `per_element` once, to
    /// emit the loop body for the 64-bit element index it is given. Every thread starts at
    /// its global id and steps by the total thread count, so any launch shape covers `n`.
    pub fn grid_stride_loop(&mut self, n: Reg, per_element: impl FnOnce(&mut Body, Reg)) {
        let special = |b: &mut Body, name: &str| b.def(RegClass::B32, "mov.u32", &[&name]);
        let ctaid = special(self, "%ctaid.x");
        let ntid = special(self, "%ntid.x");
        let tid = special(self, "%tid.x");
        let nctaid = special(self, "%nctaid.x");
        let block_start = self.def(RegClass::B64, "mul.wide.u32", &[&ctaid, &ntid]);
        let tid64 = self.def(RegClass::B64, "cvt.u64.u32", &[&tid]);
        let i = self.def(RegClass::B64, "add.s64", &[&block_start, &tid64]);
        let stride = self.def(RegClass::B64, "mul.wide.u32", &[&ntid, &nctaid]);
        let top = self.label("loop");
        let done = self.label("done");
        self.place(&top);
        let past_end = self.def(RegClass::Pred, "setp.ge.u64", &[&i, &n]);
        self.emit(&format!("@{past_end} bra"), &[&done]);
        per_element(self, i);
        self.emit("add.s64", &[&i, &i, &stride]);
        self.emit("bra", &[&top]);
        self.place(&done);
    }
}

/// A kernel entry: `.visible .entry name(.param .u64 p, …) { body }`.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// The entry's symbol name.
    pub name: String,
    /// Parameter names, each a `.u64` (a device pointer or a count).
    pub params: Vec<String>,
    /// The instructions.
    pub body: Body,
}

/// The text of a module holding `kernels`, for `target`.
pub fn emit_module(target: Target, kernels: &[Kernel]) -> String {
    let (major, minor) = target.ptx_version;
    let mut out = String::new();
    out.push_str("// Generated by kiln-ptx.\n");
    let _ = write!(
        out,
        ".version {major}.{minor}\n.target sm_{}\n.address_size 64\n",
        target.sm
    );
    for k in kernels {
        let _ = write!(out, "\n.visible .entry {}(\n", k.name);
        let params: Vec<String> = k
            .params
            .iter()
            .map(|p| format!("\t.param .u64 {p}"))
            .collect();
        out.push_str(&params.join(",\n"));
        out.push_str("\n)\n{\n");
        for (slot, (_, ty, prefix)) in REG_CLASSES.iter().enumerate() {
            let count = k.body.regs[slot];
            if count > 0 {
                // `%r<N>` declares %r0 … %r(N-1); numbering starts at 1.
                let _ = writeln!(out, "\t.reg {ty} {prefix}<{}>;", count + 1);
            }
        }
        out.push('\n');
        for line in &k.body.lines {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str("\tret;\n}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_table() {
        assert_eq!(Target::from_sm(80).unwrap().ptx_version, (7, 0));
        assert_eq!(Target::from_sm(90).unwrap().ptx_version, (7, 8));
        let err = Target::from_sm(75).unwrap_err().to_string();
        assert!(err.contains("sm_75") && err.contains("sm_80"), "{err}");
    }

    #[test]
    fn registers_are_numbered_per_class_and_declared() {
        let mut b = Body::new();
        let x = b.reg(RegClass::F32);
        let y = b.def(RegClass::F32, "add.rn.f32", &[&x, &x]);
        let p = b.reg(RegClass::Pred);
        assert_eq!(
            (x.to_string(), y.to_string(), p.to_string()),
            ("%f1".into(), "%f2".into(), "%p1".into())
        );
        let text = emit_module(
            Target::from_sm(80).unwrap(),
            &[Kernel {
                name: "k".into(),
                params: vec!["a".into()],
                body: b,
            }],
        );
        assert!(
            text.contains(".version 7.0\n.target sm_80\n.address_size 64\n"),
            "{text}"
        );
        assert!(
            text.contains("\t.reg .pred %p<2>;\n\t.reg .f32 %f<3>;\n"),
            "{text}"
        );
        assert!(text.contains("\tadd.rn.f32 %f2, %f1, %f1;\n"), "{text}");
    }
}
