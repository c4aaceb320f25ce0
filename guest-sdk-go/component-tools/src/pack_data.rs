//! Go's linker splits a module's data into one segment per run between
//! stretches of zeros, up to 100,000 of them, the most wasmtime accepts.
//! The host's snapshot of an initialised provider keeps a module's segments
//! (as passive ones) and adds its own, so a Go provider would go over the
//! limit and could not be snapshotted. Packing the segments into at most
//! [`MAX_SEGMENTS`], with the zeros between them written out, leaves room;
//! the module's memory starts out exactly as before.

use std::cmp::Reverse;
use std::convert::Infallible;

use wasm_encoder::reencode::{self, Reencode};
use wasm_encoder::{ConstExpr, DataSection, Module};
use wasmparser::{DataKind, DataSectionReader, Operator, Parser, Payload};

/// The most data segments a packed module has.
pub const MAX_SEGMENTS: usize = 1000;

/// `wasm` with its active data segments packed into at most
/// [`MAX_SEGMENTS`]; `wasm` as it is when its data cannot be packed
/// without changing what it does: a passive segment or a data count
/// section (which instructions may refer to), a segment of another memory,
/// an offset that is not a constant, segments that overlap.
///
/// # Errors
/// When `wasm` is not a well-formed core module.
pub fn pack(wasm: &[u8]) -> anyhow::Result<Vec<u8>> {
    pack_into(wasm, MAX_SEGMENTS)
}

fn pack_into(wasm: &[u8], max_segments: usize) -> anyhow::Result<Vec<u8>> {
    let mut packed = None;
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::DataCountSection { .. } => return Ok(wasm.to_vec()),
            Payload::DataSection(section) => {
                packed = placed(section)?
                    .filter(|placed| placed.len() > max_segments)
                    .map(|placed| merge(placed, max_segments));
            }
            _ => {}
        }
    }
    let Some(segments) = packed else { return Ok(wasm.to_vec()) };
    let mut module = Module::new();
    Packer { segments }.parse_core_module(&mut module, Parser::new(0), wasm).map_err(|err| anyhow::anyhow!("{err}"))?;
    Ok(module.finish())
}

/// Re-encodes a module as it is but for its data section, which becomes
/// `segments`, at their offsets in memory 0.
struct Packer {
    segments: Vec<(u32, Vec<u8>)>,
}

impl Reencode for Packer {
    type Error = Infallible;

    fn parse_data_section(
        &mut self,
        data: &mut DataSection,
        _: DataSectionReader<'_>,
    ) -> Result<(), reencode::Error<Infallible>> {
        for (offset, bytes) in &self.segments {
            data.active(0, &ConstExpr::i32_const(offset.cast_signed()), bytes.iter().copied());
        }
        Ok(())
    }
}

/// An active segment of memory 0 at a constant offset.
struct Placed<'a> {
    offset: u32,
    bytes: &'a [u8],
}

impl Placed<'_> {
    fn end(&self) -> u64 {
        u64::from(self.offset) + self.bytes.len() as u64
    }
}

/// The section's segments sorted by offset; `None` when one is not an
/// active segment of memory 0 at a constant offset, or two overlap.
fn placed(section: DataSectionReader<'_>) -> Result<Option<Vec<Placed<'_>>>, wasmparser::Error> {
    let mut placed = Vec::new();
    for datum in section {
        let datum = datum?;
        let DataKind::Active { memory_index: 0, offset_expr } = datum.kind else { return Ok(None) };
        let mut operators = offset_expr.get_operators_reader();
        let (Operator::I32Const { value }, Operator::End) = (operators.read()?, operators.read()?) else {
            return Ok(None);
        };
        placed.push(Placed { offset: value.cast_unsigned(), bytes: datum.data });
    }
    placed.sort_by_key(|segment| segment.offset);
    let overlap = placed.windows(2).any(|pair| pair[0].end() > u64::from(pair[1].offset));
    Ok((!overlap).then_some(placed))
}

/// `placed` (sorted, apart) as at most `max_segments` segments: the largest
/// gaps stay, the others are filled with zeros.
fn merge(placed: Vec<Placed<'_>>, max_segments: usize) -> Vec<(u32, Vec<u8>)> {
    let gap = |index: usize| u64::from(placed[index + 1].offset) - placed[index].end();
    let mut by_size: Vec<usize> = (0..placed.len().saturating_sub(1)).collect();
    by_size.sort_by_key(|&index| Reverse(gap(index)));
    let mut split_after = vec![false; placed.len()];
    for &index in by_size.iter().take(max_segments.saturating_sub(1)) {
        split_after[index] = true;
    }
    let mut merged: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut open = false;
    for (index, segment) in placed.iter().enumerate() {
        match merged.last_mut() {
            Some((offset, bytes)) if open => {
                let filled = (segment.offset - *offset) as usize;
                bytes.resize(filled, 0);
                bytes.extend_from_slice(segment.bytes);
            }
            _ => merged.push((segment.offset, segment.bytes.to_vec())),
        }
        open = !split_after[index];
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_encoder::{MemorySection, MemoryType};

    fn module(segments: &[(Option<i32>, &[u8])]) -> Vec<u8> {
        let mut module = Module::new();
        let mut memories = MemorySection::new();
        memories.memory(MemoryType { minimum: 1, maximum: None, memory64: false, shared: false, page_size_log2: None });
        module.section(&memories);
        let mut data = DataSection::new();
        for &(offset, bytes) in segments {
            match offset {
                Some(offset) => data.active(0, &ConstExpr::i32_const(offset), bytes.iter().copied()),
                None => data.passive(bytes.iter().copied()),
            };
        }
        module.section(&data);
        module.finish()
    }

    /// The module's first page as its active segments write it, and how
    /// many segments it has.
    fn image(wasm: &[u8]) -> (Vec<u8>, usize) {
        wasmparser::Validator::new().validate_all(wasm).expect("a valid module");
        let mut memory = vec![0; 65536];
        let mut count = 0;
        for payload in Parser::new(0).parse_all(wasm) {
            if let Payload::DataSection(section) = payload.unwrap() {
                for segment in placed(section).unwrap().expect("placed segments") {
                    let start = segment.offset as usize;
                    memory[start..start + segment.bytes.len()].copy_from_slice(segment.bytes);
                    count += 1;
                }
            }
        }
        (memory, count)
    }

    #[test]
    fn segments_are_packed_across_the_smallest_gaps_and_memory_starts_the_same() {
        let wasm = module(&[(Some(100), b"ab"), (Some(10), b"xyz"), (Some(40_000), b"far"), (Some(200), b"c")]);
        let packed = pack_into(&wasm, 2).unwrap();
        let (before, four) = image(&wasm);
        let (after, two) = image(&packed);
        assert_eq!((four, two), (4, 2));
        assert_eq!(before, after);
        assert_eq!(pack_into(&wasm, 1).map(|packed| image(&packed)).unwrap(), (before.clone(), 1));
        assert_eq!(pack_into(&wasm, 10).map(|packed| image(&packed)).unwrap(), (before, 4));
    }

    #[test]
    fn data_that_cannot_be_moved_safely_is_left_as_it_is() {
        let passive = module(&[(Some(0), b"a"), (None, b"b")]);
        let overlapping = module(&[(Some(0), b"abc"), (Some(2), b"z")]);
        for wasm in [passive, overlapping] {
            assert_eq!(pack_into(&wasm, 1).unwrap(), wasm);
        }
    }
}
