//! The native floor for `kafkalog verify`: decode every batch and record of the given .log files
//! with kafka-protocol's RecordBatchDecoder (CRC checked, every codec it supports), one core.
//!
//!   kafka-native-floor [--repeat N] FILE...
//! prints {"files", "bytes", "batches", "records", "legacy_batches", "errors", "seconds",
//! "records_per_s", "mb_per_s"}. Magic 0/1 message sets (which the crate does not decode) are
//! skipped by their length and counted; a file stops at its first undecodable batch (a broker
//! segment's preallocated tail, a torn write) and counts one error.
use bytes::{Buf, Bytes};
use kafka_protocol::records::RecordBatchDecoder;
use std::time::Instant;

const LOG_OVERHEAD: usize = 12; // base offset (8) + length (4)
const MAGIC_OFFSET: usize = 16;

#[derive(Default)]
struct Counts {
    bytes: u64,
    batches: u64,
    records: u64,
    legacy_batches: u64,
    errors: u64,
    payload: u64, // key+value bytes touched, so the records cannot be optimised away
}

fn decode_file(data: Bytes, c: &mut Counts) {
    c.bytes += data.len() as u64;
    let mut buf = data;
    while buf.remaining() > MAGIC_OFFSET {
        let size = i32::from_be_bytes(buf[8..12].try_into().unwrap());
        if size <= 0 || LOG_OVERHEAD + size as usize > buf.remaining() {
            c.errors += 1; // zero-filled tail or truncated batch: where a reader stops
            return;
        }
        if buf[MAGIC_OFFSET] != 2 {
            c.legacy_batches += 1;
            buf.advance(LOG_OVERHEAD + size as usize);
            continue;
        }
        match RecordBatchDecoder::decode(&mut buf) {
            Ok(set) => {
                c.batches += 1;
                c.records += set.records.len() as u64;
                for r in &set.records {
                    c.payload += r.key.as_ref().map_or(0, |k| k.len() as u64)
                        + r.value.as_ref().map_or(0, |v| v.len() as u64);
                }
            }
            Err(_) => {
                c.errors += 1;
                return;
            }
        }
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut repeat = 1usize;
    if args.len() >= 2 && args[0] == "--repeat" {
        repeat = args[1].parse().expect("--repeat N");
        args.drain(0..2);
    }
    if args.is_empty() {
        eprintln!("usage: kafka-native-floor [--repeat N] FILE...");
        std::process::exit(2);
    }
    let mut c = Counts::default();
    let start = Instant::now();
    for _ in 0..repeat {
        for path in &args {
            match std::fs::read(path) {
                Ok(v) => decode_file(Bytes::from(v), &mut c),
                Err(e) => {
                    eprintln!("{path}: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"files\": {}, \"bytes\": {}, \"batches\": {}, \"records\": {}, \"legacy_batches\": {}, \
         \"errors\": {}, \"payload_bytes\": {}, \"seconds\": {:.6}, \"records_per_s\": {:.0}, \
         \"mb_per_s\": {:.1}}}",
        args.len() * repeat, c.bytes, c.batches, c.records, c.legacy_batches, c.errors, c.payload,
        secs, c.records as f64 / secs, c.bytes as f64 / secs / 1e6
    );
}
