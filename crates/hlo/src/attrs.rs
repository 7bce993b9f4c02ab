//! Instruction attributes: `name=value` after the operands. Attributes whose meaning the
//! importer may need are parsed into typed values; every other one (`metadata`,
//! `sharding`, `frontend_attributes`, `backend_config`, …) is skipped robustly — nested
//! brackets, strings with escapes — and kept as its raw text, so conversion can refuse an
//! attribute by name.

use crate::error::{HloError, Pos};
use crate::lexer::Tok;
use crate::parser::Parser;

/// `name=value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Attr {
    /// The attribute's name.
    pub name: String,
    /// Where the name is.
    pub pos: Pos,
    /// The value.
    pub value: AttrValue,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// `{0,1}`: dimension lists (`dimensions`, dot and gather/scatter dimension numbers,
    /// `slice_sizes`, `dynamic_slice_sizes`, …).
    Ints(Vec<i64>),
    /// `index=0`, `iota_dimension=1`, `feature_group_count=2`, …
    Int(i64),
    /// `is_stable=true`, `indices_are_sorted=false`, …
    Bool(bool),
    /// A bare word: `direction=LT`, `type=TOTALORDER`, `kind=kLoop`, `rng_algorithm=…`.
    Word(String),
    /// Called computations: `to_apply=%r`, `calls=%f`, `branch_computations={%a, %b}`.
    Computations(Vec<String>),
    /// A list of words: `precision_config={default,highest}`.
    Words(Vec<String>),
    /// `slice={[0:2:1], [1:4]}`.
    Slice(Vec<SliceDim>),
    /// `padding=0_0x1_2_1`.
    Padding(Vec<PadDim>),
    /// `window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1}`.
    Window(Vec<WindowDim>),
    /// `dim_labels=b01f_01io->b01f`: input, kernel and output labels.
    DimLabels(String, String, String),
    /// A string: `custom_call_target="foo"`.
    Str(String),
    /// Anything else, as written.
    Raw(String),
}

/// One dimension of `slice=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceDim {
    /// First index.
    pub start: i64,
    /// One past the last index.
    pub limit: i64,
    /// Step (1 when not written).
    pub stride: i64,
}

/// One dimension of `padding=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PadDim {
    /// Elements added before (negative: removed).
    pub low: i64,
    /// Elements added after (negative: removed).
    pub high: i64,
    /// Elements added between neighbours (0 when not written).
    pub interior: i64,
}

/// One dimension of `window=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowDim {
    /// Window size.
    pub size: i64,
    /// Step between windows (1 when not written).
    pub stride: i64,
    /// Padding before.
    pub pad_low: i64,
    /// Padding after.
    pub pad_high: i64,
    /// Base (lhs) dilation (1 when not written).
    pub lhs_dilate: i64,
    /// Window (rhs) dilation (1 when not written).
    pub rhs_dilate: i64,
    /// Window reversed (`rhs_reversal=1`).
    pub reversal: bool,
}

const INT_LISTS: &[&str] = &[
    "dimensions",
    "lhs_batch_dims",
    "lhs_contracting_dims",
    "rhs_batch_dims",
    "rhs_contracting_dims",
    "offset_dims",
    "collapsed_slice_dims",
    "start_index_map",
    "operand_batching_dims",
    "start_indices_batching_dims",
    "slice_sizes",
    "update_window_dims",
    "inserted_window_dims",
    "scatter_dims_to_operand_dims",
    "input_batching_dims",
    "scatter_indices_batching_dims",
    "dynamic_slice_sizes",
    "fft_length",
];
const INTS: &[&str] = &[
    "index",
    "index_vector_dim",
    "iota_dimension",
    "feature_group_count",
    "batch_group_count",
    "exponent_bits",
    "mantissa_bits",
    "channel_id",
    "k",
];
const BOOLS: &[&str] = &[
    "indices_are_sorted",
    "unique_indices",
    "is_stable",
    "constrain_layout",
    "use_global_device_ids",
    "largest",
    "lower",
    "left_side",
    "unit_diagonal",
];
const COMPUTATIONS: &[&str] = &[
    "to_apply",
    "condition",
    "body",
    "select",
    "scatter",
    "calls",
    "branch_computations",
    "called_computations",
    "true_computation",
    "false_computation",
];
const WORDS: &[&str] = &[
    "direction",
    "type",
    "comparison_type",
    "rng_algorithm",
    "algorithm",
    "kind",
    "distribution",
    "fft_type",
    "transpose_a",
];

impl Parser<'_> {
    /// `name=value`.
    pub(crate) fn attr(&mut self) -> Result<Attr, HloError> {
        let (name, pos) = self.word("an attribute name")?;
        self.expect('=')?;
        let n = name.as_str();
        let value = if INT_LISTS.contains(&n) {
            AttrValue::Ints(self.int_list()?)
        } else if INTS.contains(&n) {
            AttrValue::Int(self.int("an integer")?)
        } else if BOOLS.contains(&n) {
            match self.word("'true' or 'false'")?.0.as_str() {
                "true" => AttrValue::Bool(true),
                "false" => AttrValue::Bool(false),
                _ => return Err(self.error(pos, format!("{name}= expects 'true' or 'false'"))),
            }
        } else if COMPUTATIONS.contains(&n) {
            AttrValue::Computations(self.name_list()?)
        } else if WORDS.contains(&n) {
            AttrValue::Word(self.word("a word")?.0)
        } else if n == "precision_config" || n == "operand_precision" {
            AttrValue::Words(self.name_list()?)
        } else if n == "slice" {
            AttrValue::Slice(self.slice_dims()?)
        } else if n == "padding" {
            let (w, wpos) = self.word("padding like 0_0x1_2")?;
            AttrValue::Padding(self.padding(&w, wpos)?)
        } else if n == "window" {
            AttrValue::Window(self.window()?)
        } else if n == "dim_labels" {
            let (lhs, lpos) = self.word("input labels like b01f")?;
            let Some((input, kernel)) = lhs.split_once('_') else {
                return Err(self.error(lpos, "expected input and kernel labels like b01f_01io"));
            };
            if *self.peek()? != Tok::Arrow {
                return self.expected("'->'");
            }
            self.next()?;
            let (output, _) = self.word("output labels like b01f")?;
            AttrValue::DimLabels(input.to_string(), kernel.to_string(), output)
        } else if let Tok::Str(_) = self.peek()? {
            match self.next()?.tok {
                Tok::Str(s) => AttrValue::Str(s),
                _ => unreachable!("peeked a string"),
            }
        } else {
            AttrValue::Raw(self.raw_value()?)
        };
        Ok(Attr { name, pos, value })
    }

    /// `{1, 2}` or `{}`.
    fn int_list(&mut self) -> Result<Vec<i64>, HloError> {
        self.expect('{')?;
        let mut v = Vec::new();
        if !self.at_punct('}')? {
            loop {
                v.push(self.int("an integer")?);
                if !self.eat(',')? {
                    break;
                }
            }
        }
        self.expect('}')?;
        Ok(v)
    }

    /// `%name`, `name`, or `{%a, %b}` / `{default, default}`.
    fn name_list(&mut self) -> Result<Vec<String>, HloError> {
        if !self.eat('{')? {
            return Ok(vec![self.name("a name")?.0]);
        }
        let mut v = Vec::new();
        if !self.at_punct('}')? {
            loop {
                v.push(self.name("a name")?.0);
                if !self.eat(',')? {
                    break;
                }
            }
        }
        self.expect('}')?;
        Ok(v)
    }

    /// `{[0:2:1], [1:4]}`.
    fn slice_dims(&mut self) -> Result<Vec<SliceDim>, HloError> {
        self.expect('{')?;
        let mut v = Vec::new();
        if !self.at_punct('}')? {
            loop {
                self.expect('[')?;
                let start = self.int("a start index")?;
                self.expect(':')?;
                let limit = self.int("a limit index")?;
                let stride = if self.eat(':')? {
                    self.int("a stride")?
                } else {
                    1
                };
                self.expect(']')?;
                v.push(SliceDim {
                    start,
                    limit,
                    stride,
                });
                if !self.eat(',')? {
                    break;
                }
            }
        }
        self.expect('}')?;
        Ok(v)
    }

    /// Splits `axb…` words of a window or padding into per-dimension integer groups
    /// separated by `_`.
    fn groups(&self, w: &str, pos: Pos, what: &str) -> Result<Vec<Vec<i64>>, HloError> {
        w.split('x')
            .map(|dim| {
                dim.split('_')
                    .map(|n| n.parse::<i64>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| self.error(pos, format!("expected {what}, found '{w}'")))
            })
            .collect()
    }

    fn padding(&self, w: &str, pos: Pos) -> Result<Vec<PadDim>, HloError> {
        let what = "padding like 0_0x1_2 or 0_0_1";
        self.groups(w, pos, what)?
            .into_iter()
            .map(|g| match g[..] {
                [low, high] => Ok(PadDim {
                    low,
                    high,
                    interior: 0,
                }),
                [low, high, interior] => Ok(PadDim {
                    low,
                    high,
                    interior,
                }),
                _ => Err(self.error(pos, format!("expected {what}, found '{w}'"))),
            })
            .collect()
    }

    /// `{size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0}`.
    fn window(&mut self) -> Result<Vec<WindowDim>, HloError> {
        self.expect('{')?;
        let mut fields: Vec<(String, Pos, Vec<Vec<i64>>)> = Vec::new();
        while !self.at_punct('}')? {
            let (key, kpos) = self.word("a window field or '}'")?;
            self.expect('=')?;
            let (w, wpos) = self.word("a window value like 3x3")?;
            let groups = self.groups(&w, wpos, "numbers like 3x3 or 0_1x0_1")?;
            if fields.iter().any(|f| f.0 == key) {
                return Err(self.error(kpos, format!("window field '{key}' given twice")));
            }
            fields.push((key, kpos, groups));
        }
        self.expect('}')?;
        let Some(size) = fields.iter().find(|f| f.0 == "size") else {
            let pos = self.peek_pos()?;
            return Err(self.error(pos, "window without size="));
        };
        let rank = size.2.len();
        let mut dims = vec![
            WindowDim {
                size: 1,
                stride: 1,
                pad_low: 0,
                pad_high: 0,
                lhs_dilate: 1,
                rhs_dilate: 1,
                reversal: false,
            };
            rank
        ];
        for (key, kpos, groups) in &fields {
            if groups.len() != rank {
                let msg = format!(
                    "window field '{key}' has {} dimensions, size= has {rank}",
                    groups.len()
                );
                return Err(self.error(*kpos, msg));
            }
            for (d, g) in dims.iter_mut().zip(groups) {
                match (key.as_str(), &g[..]) {
                    ("size", [v]) => d.size = *v,
                    ("stride", [v]) => d.stride = *v,
                    ("pad", [lo, hi]) => (d.pad_low, d.pad_high) = (*lo, *hi),
                    ("lhs_dilate", [v]) => d.lhs_dilate = *v,
                    ("rhs_dilate", [v]) => d.rhs_dilate = *v,
                    ("rhs_reversal", [v]) => d.reversal = *v != 0,
                    _ => {
                        let msg = format!("unexpected window field or value '{key}'");
                        return Err(self.error(*kpos, msg));
                    }
                }
            }
        }
        Ok(dims)
    }

    /// Skips a value of an attribute the importer has no use for, returning its text: a
    /// bracketed group, or the tokens up to the next `,`, closing bracket or line.
    pub(crate) fn raw_value(&mut self) -> Result<String, HloError> {
        let first = self.lex.peek(0)?.clone();
        if matches!(first.tok, Tok::Eof | Tok::Punct(',' | '}' | ')' | ']')) {
            return self.expected("an attribute value");
        }
        let start = first.start;
        let mut end = first.end;
        let mut line = first.pos.line;
        let mut depth = 0usize;
        let mut taken = 0usize;
        loop {
            let t = self.lex.peek(0)?.clone();
            let ends =
                matches!(t.tok, Tok::Eof | Tok::Punct(',' | '}' | ')' | ']')) || t.pos.line != line;
            if taken > 0 && depth == 0 && ends {
                break;
            }
            match t.tok {
                Tok::Eof => {
                    let msg = "expected a closing bracket in an attribute value, found end of file";
                    return Err(self.error(t.pos, msg));
                }
                Tok::Punct('{' | '(' | '[') => depth += 1,
                Tok::Punct('}' | ')' | ']') => depth = depth.saturating_sub(1),
                _ => {}
            }
            self.next()?;
            taken += 1;
            end = t.end;
            line = t.pos.line;
        }
        Ok(self.lex.src()[start..end].to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_module;

    fn attrs(text: &str) -> Vec<Attr> {
        let src = format!("HloModule m\nENTRY e {{\n  ROOT x = f32[] parameter(0), {text}\n}}\n");
        let m = parse_module(&src, "t.hlo").unwrap_or_else(|e| panic!("{e}"));
        m.computations[0].instructions[0].attrs.clone()
    }

    #[test]
    fn typed_values() {
        let a = attrs("slice={[0:2:1], [1:4]}, padding=0_0x1_-2_1, dim_labels=b01f_01io->b01f");
        assert_eq!(
            a[0].value,
            AttrValue::Slice(vec![
                SliceDim {
                    start: 0,
                    limit: 2,
                    stride: 1
                },
                SliceDim {
                    start: 1,
                    limit: 4,
                    stride: 1
                }
            ])
        );
        assert_eq!(
            a[1].value,
            AttrValue::Padding(vec![
                PadDim {
                    low: 0,
                    high: 0,
                    interior: 0
                },
                PadDim {
                    low: 1,
                    high: -2,
                    interior: 1
                }
            ])
        );
        assert_eq!(
            a[2].value,
            AttrValue::DimLabels("b01f".into(), "01io".into(), "b01f".into())
        );
        let w = attrs("window={size=3x2 stride=2x1 pad=0_1x1_0 lhs_dilate=1x2 rhs_dilate=2x1}");
        let AttrValue::Window(w) = &w[0].value else {
            panic!()
        };
        assert_eq!(
            (w[0].size, w[0].stride, w[0].pad_high, w[0].rhs_dilate),
            (3, 2, 1, 2)
        );
        assert_eq!((w[1].size, w[1].pad_low, w[1].lhs_dilate), (2, 1, 2));
    }

    #[test]
    fn unknown_values_are_kept_raw() {
        let a = attrs(
            "metadata={op_name=\"a{b}\\\"c\" source_line=3}, sharding={devices=[2,1]0,1}, \
             foo=bar->baz, to_apply=%r, backend_config=\"{}\"",
        );
        assert_eq!(
            a[0].value,
            AttrValue::Raw("{op_name=\"a{b}\\\"c\" source_line=3}".into())
        );
        assert_eq!(a[1].value, AttrValue::Raw("{devices=[2,1]0,1}".into()));
        assert_eq!(a[2].value, AttrValue::Raw("bar->baz".into()));
        assert_eq!(a[3].value, AttrValue::Computations(vec!["r".into()]));
        assert_eq!(a[4].value, AttrValue::Str("{}".into()));
    }
}
