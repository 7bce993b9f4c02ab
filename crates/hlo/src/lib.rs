//! XLA HLO text -> a Kiln [`Module`](kiln_ir::Module).
//!
//! Reads what JAX (`jax.jit(f).lower(*args).compiler_ir('hlo').as_hlo_text()`), TensorFlow
//! (`experimental_get_compiler_ir(*args)(stage='hlo')`) and `XLA_FLAGS=--xla_dump_to=DIR`
//! print, in either printing style: JAX's bare names and unsigned computation headers, or
//! TensorFlow's `%names`, signed headers and typed operands. [`parse`] gives the HLO AST,
//! [`import`] the Kiln module (verified), and [`is_hlo`] tells HLO text from `.kir`.
//!
//! Layouts are parsed and ignored: they are physical, and Kiln's values (like `.npy` data)
//! are logical and row-major. The crate knows nothing below the IR.
//!
//! **Invariant:** no input makes it panic, loop forever, overflow the stack or allocate more
//! than the input spells out; every rejection names the file, line and column.

pub mod ast;
pub mod attrs;
mod bf16_boundary;
mod control;
mod convert;
mod error;
mod indexing;
mod lapack;
mod lexer;
mod linalg;
mod literal;
mod movement;
mod ops;
mod parser;
mod precision;
mod reducer;
mod region;
mod rng;
mod sorting;
mod window;

pub use ast::{ArrayShape, Computation, HloModule, Instruction, Literal, Operand, Operands, Shape};
pub use attrs::{Attr, AttrValue, PadDim, SliceDim, WindowDim};
pub use error::{Diagnostic, ErrorKind, HloError, Pos};
pub use parser::MAX_DEPTH;

/// Parses HLO text into its AST; `file_name` names the text in errors.
pub fn parse(text: &str, file_name: &str) -> Result<HloModule, HloError> {
    parser::parse_module(text, file_name)
}

/// Parses HLO text and converts it to a Kiln module that passes
/// [`kiln_ir::verify_module`]: one function `@main`, the entry computation, with parameters
/// in `parameter(N)` order and the ROOT's values (a tuple flattened) as results. Errors list
/// every unsupported op of the module.
pub fn import(text: &str, file_name: &str) -> Result<kiln_ir::Module, HloError> {
    let module = parse(text, file_name)?;
    convert::convert_module(&module, file_name)
}

/// True when the text starts (after whitespace and `//` or `/* */` comments) with the
/// `HloModule` header.
pub fn is_hlo(text: &str) -> bool {
    let mut lex = lexer::Lexer::new(text, "");
    matches!(lex.next(), Ok(lexer::Token { tok: lexer::Tok::Word(w), .. }) if w == "HloModule")
}
