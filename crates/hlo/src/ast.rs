//! The HLO AST: what the text says, before any meaning is given to it. Both printing styles
//! (JAX's bare names, TensorFlow's `%names` with typed operands and signed headers) parse
//! to the same tree.

use crate::attrs::Attr;
use crate::error::Pos;

/// An HLO module: `HloModule name, attrs…` and its computations.
#[derive(Debug, Clone, PartialEq)]
pub struct HloModule {
    /// The module's name.
    pub name: String,
    /// The header's attributes (`entry_computation_layout`, `is_scheduled`, …), kept raw.
    pub attrs: Vec<Attr>,
    /// The computations, in text order.
    pub computations: Vec<Computation>,
    /// Index of the entry computation (`ENTRY`, else the last one, as XLA reads it).
    pub entry: usize,
}

impl HloModule {
    /// The computation named `name`.
    pub fn computation(&self, name: &str) -> Option<(usize, &Computation)> {
        self.computations
            .iter()
            .enumerate()
            .find(|(_, c)| c.name == name)
    }

    /// The entry computation.
    pub fn entry(&self) -> &Computation {
        &self.computations[self.entry]
    }
}

/// `[ENTRY] name [(params) -> result] { instructions }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Computation {
    /// The name (without `%`).
    pub name: String,
    /// Where the name is.
    pub pos: Pos,
    /// Marked `ENTRY`.
    pub is_entry: bool,
    /// TensorFlow-style signature: parameter names and shapes, and the result shape.
    pub signature: Option<(Vec<(String, Shape)>, Shape)>,
    /// The instructions, in text order.
    pub instructions: Vec<Instruction>,
    /// Index of the `ROOT` instruction (the last one when none is marked).
    pub root: usize,
}

/// `[ROOT] name = shape opcode(operands), attr=value, …`.
#[derive(Debug, Clone, PartialEq)]
pub struct Instruction {
    /// The name (without `%`).
    pub name: String,
    /// Where the name is.
    pub pos: Pos,
    /// Marked `ROOT`.
    pub is_root: bool,
    /// The declared result shape.
    pub shape: Shape,
    /// The opcode as written (`add`, `get-tuple-element`, …).
    pub opcode: String,
    /// Where the opcode is.
    pub opcode_pos: Pos,
    /// What stands in the parentheses.
    pub operands: Operands,
    /// The attributes after the operands, in text order.
    pub attrs: Vec<Attr>,
}

impl Instruction {
    /// The attribute named `name`.
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.name == name)
    }

    /// The operand references (empty for `constant` and `parameter`).
    pub fn operand_refs(&self) -> &[Operand] {
        match &self.operands {
            Operands::List(ops) => ops,
            _ => &[],
        }
    }
}

/// The parenthesised part of an instruction.
#[derive(Debug, Clone, PartialEq)]
pub enum Operands {
    /// References to other instructions: `(a, f32[2]{0} %b)`.
    List(Vec<Operand>),
    /// `constant(literal)`.
    Literal(Literal),
    /// `parameter(N)`.
    Parameter(u64),
}

/// A reference to an instruction, with the type TensorFlow's style prints before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Operand {
    /// The instruction named.
    pub name: String,
    /// The inline type, when printed.
    pub shape: Option<Shape>,
    /// Where the name is.
    pub pos: Pos,
}

/// A shape: an array, or a tuple of shapes.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// `f32[2,3]{1,0}`.
    Array(ArrayShape),
    /// `(f32[], (s32[2], pred[]))`.
    Tuple(Vec<Shape>),
}

impl Shape {
    /// The array shape, if this is one.
    pub fn as_array(&self) -> Option<&ArrayShape> {
        match self {
            Shape::Array(a) => Some(a),
            Shape::Tuple(_) => None,
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Array(a) => {
                let dims: Vec<String> = a
                    .dims
                    .iter()
                    .zip(&a.dynamic)
                    .map(|(d, &dy)| if dy { format!("<={d}") } else { d.to_string() })
                    .collect();
                write!(f, "{}[{}]", a.dtype, dims.join(","))
            }
            Shape::Tuple(items) => {
                let items: Vec<String> = items.iter().map(|s| s.to_string()).collect();
                write!(f, "({})", items.join(", "))
            }
        }
    }
}

/// An array shape: element type, dimensions and the physical layout.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayShape {
    /// The element type as written (`f32`, `pred`, `s32`, `bf16`, `token`, …).
    pub dtype: String,
    /// Dimension sizes (for a dynamic dimension, its bound).
    pub dims: Vec<u64>,
    /// Per dimension: dynamic (`<=N` or `?`).
    pub dynamic: Vec<bool>,
    /// The layout's minor-to-major order when it is a plain list (`{1,0}`); tiling and
    /// memory-space suffixes are skipped. Layouts are physical: logical values, which is all
    /// Kiln sees, do not depend on them.
    pub layout: Option<Vec<u64>>,
}

/// A constant's literal.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// One value as written: `1`, `-inf`, `nan`, `true`, `1e-07`.
    Scalar(String, Pos),
    /// `{…}`: nested lists of literals, one level per dimension.
    List(Vec<Literal>, Pos),
    /// `( … )`: a tuple literal.
    Tuple(Vec<Literal>, Pos),
    /// `{...}`: elided by the printer (XLA prints large constants so when asked to).
    Elided(Pos),
}
