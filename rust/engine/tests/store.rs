//! The durable store: snapshot round trips, log recovery, injected I/O faults, damage
//! detection and a bounded fuzz of the decoders (proptest).

use std::path::Path;

use proptest::prelude::*;
use trimem_engine::index::ImageBlocks;
use trimem_engine::store::fs::FaultKind;
use trimem_engine::store::{wal, Durability, Store};
use trimem_engine::{Batch, EngineError, Filter, HybridIndex, IndexConfig, Mode, SearchParams};

const DIM: usize = 16;

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// An index with deletes, sessions, several namespaces and a reused slot.
fn sample_index(n: u64) -> HybridIndex {
    let mut next = rng(n);
    let mut idx = HybridIndex::new(IndexConfig {
        dim: DIM,
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let words = [
        "docker",
        "node",
        "port",
        "8080",
        "nginx",
        "mysql",
        "数据库",
        "迁移",
        "policy",
        "taxi",
    ];
    let ids: Vec<u64> = (1..=n).collect();
    let texts: Vec<String> = ids
        .iter()
        .map(|_| {
            (0..6)
                .map(|_| words[(next() % 10) as usize])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let vecs: Vec<f32> = (0..n as usize * DIM)
        .map(|_| (next() % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let ts: Vec<i64> = ids.iter().map(|&i| i as i64 * 1000).collect();
    let ns: Vec<String> = ids.iter().map(|&i| format!("agent/u{}", i % 5)).collect();
    let sessions: Vec<Option<String>> = ids
        .iter()
        .map(|&i| (i % 3 == 0).then(|| format!("s{}", i % 7)))
        .collect();
    let payloads: Vec<Vec<u8>> = ids.iter().map(|&i| i.to_le_bytes().to_vec()).collect();
    let batch = Batch {
        ids: &ids,
        texts: &texts,
        vectors: Some(&vecs),
        timestamps: &ts,
        namespaces: &ns,
        sessions: Some(&sessions),
        payloads: Some(&payloads),
        importance: None,
    };
    idx.add(&batch, false).unwrap();
    let gone: Vec<u64> = (1..=n).filter(|i| i % 4 == 1).collect();
    idx.delete(&gone, false).unwrap();
    let back = [1u64];
    let text = ["reused slot docker".to_owned()];
    let ns1 = ["agent/u9".to_owned()];
    idx.add(
        &Batch {
            ids: &back,
            texts: &text,
            vectors: Some(&vecs[..DIM]),
            timestamps: &[5],
            namespaces: &ns1,
            sessions: None,
            payloads: None,
            importance: None,
        },
        false,
    )
    .unwrap();
    idx
}

fn answers(idx: &HybridIndex) -> Vec<Vec<(u64, u32, u32)>> {
    let q: Vec<f32> = (0..DIM).map(|i| (i as f32 * 0.37).sin()).collect();
    let mut out = Vec::new();
    for ns in [None, Some("agent/u1"), Some("agent/u9")] {
        for mode in [Mode::Hybrid, Mode::Bm25, Mode::Vector] {
            let p = SearchParams {
                k: 10,
                mode,
                filter: Filter {
                    namespace: ns.map(str::to_owned),
                    ..Default::default()
                },
                ..Default::default()
            };
            let r = idx
                .search(Some("docker port 数据库"), Some(&q), &p)
                .unwrap();
            out.push(
                r.hits
                    .iter()
                    .map(|h| (h.id, h.bm25.map_or(0, |b| b.0), h.vector.map_or(0, |v| v.0)))
                    .collect(),
            );
        }
    }
    out
}

fn open(dir: &Path) -> trimem_engine::store::Opened {
    Store::open(dir, Durability::Fsync).unwrap()
}

#[test]
fn snapshot_round_trip_preserves_every_answer() {
    let dir = tempfile::tempdir().unwrap();
    let idx = sample_index(400);
    let before = answers(&idx);
    {
        let mut o = open(dir.path());
        o.store.append(&[b"op before checkpoint"]).unwrap();
        o.store
            .checkpoint(&[("episodes", &idx)], b"caller state")
            .unwrap();
        o.store.append(&[b"op after"]).unwrap();
    }
    let o = open(dir.path());
    assert_eq!(o.state.as_deref(), Some(&b"caller state"[..]));
    assert_eq!(o.log, vec![b"op after".to_vec()]);
    assert_eq!(o.store.recovery().generation, 1);
    let (name, back) = &o.indexes[0];
    assert_eq!(name, "episodes");
    assert_eq!(answers(back), before);
    assert_eq!(back.stats().records, idx.stats().records);
    assert_eq!(back.stats().vocabulary, idx.stats().vocabulary);
    for id in [1u64, 2, 3, 400] {
        assert_eq!(back.get(id), idx.get(id));
    }
    // Only the current generation's files remain.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "LOCK",
            "snapshot-0000000000000001.trimem",
            "wal-0000000000000001.log"
        ]
    );
}

#[test]
fn a_loaded_index_keeps_working_like_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = sample_index(300);
    {
        let mut o = open(dir.path());
        o.store.checkpoint(&[("e", &a)], b"").unwrap();
    }
    let mut b = open(dir.path()).indexes.pop().unwrap().1;
    // Same writes on both (slot reuse, term forgetting, graph repair, the level generator).
    for idx in [&mut a, &mut b] {
        idx.delete(&[2, 3, 4], false).unwrap();
        let ids = [1000u64, 1001];
        let texts = ["new docker text".to_owned(), "another 8080".to_owned()];
        let ns = ["agent/u1".to_owned(), "agent/u2".to_owned()];
        let v: Vec<f32> = (0..2 * DIM).map(|i| (i as f32).cos()).collect();
        let batch = Batch {
            ids: &ids,
            texts: &texts,
            vectors: Some(&v),
            timestamps: &[1, 2],
            namespaces: &ns,
            sessions: None,
            payloads: None,
            importance: None,
        };
        idx.add(&batch, false).unwrap();
    }
    assert_eq!(answers(&a), answers(&b));
}

#[test]
fn second_writer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = open(dir.path());
    assert!(matches!(
        Store::open(dir.path(), Durability::Fsync),
        Err(EngineError::Locked {
            in_process: true,
            ..
        })
    ));
}

#[test]
fn a_closed_store_frees_its_folder_for_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    let _again = open(dir.path());
}

#[test]
#[cfg(feature = "fault-injection")]
fn injected_faults_fail_the_write_and_leave_the_store_consistent() {
    for kind in [
        FaultKind::DiskFull,
        FaultKind::ShortWrite,
        FaultKind::SyncFails,
    ] {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut o = open(dir.path());
            o.store.append(&[b"one"]).unwrap();
            o.store.faults().arm(kind, 3, 1);
            let err = o.store.append(&[b"two: this one fails"]).unwrap_err();
            assert!(matches!(err, EngineError::Io { .. }), "{kind:?}: {err:?}");
            o.store.append(&[b"three"]).unwrap();
        }
        let o = open(dir.path());
        assert_eq!(o.log, vec![b"one".to_vec(), b"three".to_vec()], "{kind:?}");
        assert_eq!(o.store.recovery().torn_bytes, 0, "{kind:?}");
    }
}

#[test]
#[cfg(feature = "fault-injection")]
fn a_failed_checkpoint_keeps_the_previous_generation() {
    let idx = sample_index(200);
    for kind in [
        FaultKind::DiskFull,
        FaultKind::ShortWrite,
        FaultKind::SyncFails,
    ] {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut o = open(dir.path());
            o.store.append(&[b"op"]).unwrap();
            o.store.faults().arm(kind, 1000, 1);
            assert!(
                o.store.checkpoint(&[("e", &idx)], b"state").is_err(),
                "{kind:?}"
            );
            assert_eq!(o.store.generation(), 0);
            o.store.append(&[b"op2"]).unwrap();
        }
        let o = open(dir.path());
        assert!(o.indexes.is_empty() && o.state.is_none(), "{kind:?}");
        assert_eq!(o.log, vec![b"op".to_vec(), b"op2".to_vec()]);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    }
}

#[test]
fn crash_leftovers_are_cleaned_and_the_newest_snapshot_wins() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let idx = sample_index(100);
    let keep = tempfile::tempdir().unwrap();
    {
        let mut o = open(d);
        o.store.checkpoint(&[("e", &idx)], b"g1").unwrap();
        o.store.append(&[b"after g1"]).unwrap();
        for f in [
            "snapshot-0000000000000001.trimem",
            "wal-0000000000000001.log",
        ] {
            std::fs::copy(d.join(f), keep.path().join(f)).unwrap();
        }
        o.store.checkpoint(&[("e", &idx)], b"g2").unwrap();
    }
    // As if a crash hit after snapshot 2 was renamed into place but before its log existed
    // and generation 1 was removed, with an unfinished snapshot 3 lying around.
    std::fs::remove_file(d.join("wal-0000000000000002.log")).unwrap();
    for f in [
        "snapshot-0000000000000001.trimem",
        "wal-0000000000000001.log",
    ] {
        std::fs::copy(keep.path().join(f), d.join(f)).unwrap();
    }
    std::fs::write(d.join("snapshot-0000000000000003.tmp"), b"partial").unwrap();
    let o = open(d);
    assert_eq!(o.store.generation(), 2);
    assert_eq!(o.state.as_deref(), Some(&b"g2"[..]));
    assert!(
        o.log.is_empty(),
        "generation 1's log is inside snapshot 2 and must not replay"
    );
    let mut removed = o.store.recovery().removed_files.clone();
    removed.sort();
    assert_eq!(
        removed,
        [
            "snapshot-0000000000000001.trimem",
            "snapshot-0000000000000003.tmp",
            "wal-0000000000000001.log"
        ]
    );
    drop(o);
    // A snapshot whose name and content disagree is damage.
    std::fs::rename(
        d.join("snapshot-0000000000000002.trimem"),
        d.join("snapshot-0000000000000007.trimem"),
    )
    .unwrap();
    assert!(matches!(
        Store::open(d, Durability::Fsync),
        Err(EngineError::Corrupted(_))
    ));
}

fn flip_each_region(path: &Path, dir: &Path, step: usize) -> usize {
    let original = std::fs::read(path).unwrap();
    let mut detected = 0;
    let mut pos = 0;
    while pos < original.len() {
        let mut d = original.clone();
        d[pos] ^= 0x10;
        std::fs::write(path, &d).unwrap();
        match Store::open(dir, Durability::Fsync) {
            Err(EngineError::Corrupted(_)) => detected += 1,
            other => panic!(
                "flip at byte {pos} of {} gave {:?}",
                path.display(),
                other.map(|o| o.state)
            ),
        }
        pos += step;
    }
    std::fs::write(path, &original).unwrap();
    detected
}

#[test]
fn bit_flips_in_a_snapshot_are_detected() {
    let dir = tempfile::tempdir().unwrap();
    let idx = sample_index(120);
    {
        let mut o = open(dir.path());
        o.store.checkpoint(&[("e", &idx)], b"some state").unwrap();
    }
    let snap = dir.path().join("snapshot-0000000000000001.trimem");
    let n = std::fs::metadata(&snap).unwrap().len() as usize;
    assert!(flip_each_region(&snap, dir.path(), (n / 400).max(1)) >= 300);
    assert!(
        open(dir.path()).indexes.len() == 1,
        "the undamaged file still opens"
    );
}

#[test]
fn wal_generation_must_match_its_name() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut o = open(dir.path());
        o.store.append(&[b"x"]).unwrap();
    }
    std::fs::rename(
        dir.path().join("wal-0000000000000000.log"),
        dir.path().join("wal-0000000000000005.log"),
    )
    .unwrap();
    assert!(matches!(
        Store::open(dir.path(), Durability::Fsync),
        Err(EngineError::Corrupted(_))
    ));
}

fn valid_image() -> (ImageBlocks, Vec<f32>, Vec<u32>) {
    let idx = sample_index(40);
    let (blocks, v, l) = idx.image();
    (blocks, v.to_vec(), l.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    /// Arbitrary bytes never panic the log decoder.
    #[test]
    fn fuzz_log_decoder(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = wal::scan(&data, "fuzz");
    }

    /// Damaged index images (past the checksums) give an error or a usable index, never a
    /// panic: flips, overwrites and cuts of a valid image.
    #[test]
    fn fuzz_image_decoder(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
                          cut in any::<usize>(), do_cut in any::<bool>(),
                          link_edit in any::<(usize, u32)>()) {
        let (mut blocks, vectors, mut links) = valid_image();
        for (at, byte) in edits {
            let block = blocks.get_mut(ImageBlocks::NAMES[at % 4]).unwrap();
            let i = (at / 4) % block.len();
            block[i] ^= byte | 1;
        }
        if do_cut {
            let block = blocks.get_mut(ImageBlocks::NAMES[cut % 4]).unwrap();
            let n = block.len() + 1;
            block.truncate((cut / 4) % n);
        }
        let li = link_edit.0 % links.len();
        links[li] = link_edit.1;
        if let Ok(idx) = HybridIndex::from_image(&blocks, vectors, links, "fuzz") {
            let _ = answers(&idx);
        }
    }
}

#[test]
fn fuzz_log_decoder_on_valid_logs_with_damage() {
    let mut next = rng(99);
    let mut log = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    {
        let mut o = open(dir.path());
        for i in 0..20u32 {
            o.store.append(&[&vec![i as u8; (i * 7) as usize]]).unwrap();
        }
    }
    log.extend_from_slice(&std::fs::read(dir.path().join("wal-0000000000000000.log")).unwrap());
    for _ in 0..3000 {
        let mut d = log.clone();
        for _ in 0..1 + next() % 3 {
            let i = (next() as usize) % d.len();
            d[i] ^= 1 << (next() % 8);
        }
        if next().is_multiple_of(4) {
            d.truncate((next() as usize) % d.len());
        }
        match wal::scan(&d, "fuzz") {
            Ok((_, s)) => {
                // Whatever survives is a prefix of the real records, never garbage.
                let (_, good) = wal::scan(&log, "log").unwrap();
                for (a, b) in s.records.iter().zip(&good.records) {
                    assert_eq!(d[a.clone()], log[b.clone()]);
                }
            }
            Err(EngineError::Corrupted(_)) | Err(EngineError::FormatVersion { .. }) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
}

#[test]
fn a_log_whose_header_never_landed_is_started_again() {
    let idx = sample_index(50);
    for cut in [0usize, 10, 23] {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut o = open(dir.path());
            o.store.append(&[b"before"]).unwrap();
            o.store.checkpoint(&[("e", &idx)], b"g1").unwrap();
        }
        // As if the process died after creating log 1 but before its header was written.
        let wal = dir.path().join("wal-0000000000000001.log");
        let data = std::fs::read(&wal).unwrap();
        std::fs::write(&wal, &data[..cut]).unwrap();
        let mut o = open(dir.path());
        assert_eq!(o.state.as_deref(), Some(&b"g1"[..]), "cut {cut}");
        assert!(o.log.is_empty());
        assert_eq!(o.store.recovery().torn_bytes, cut);
        o.store.append(&[b"after"]).unwrap();
        drop(o);
        assert_eq!(open(dir.path()).log, vec![b"after".to_vec()]);
    }
}

/// One graph per namespace: in-namespace searches walk only that graph and equal exact
/// answers; cross-namespace searches merge every graph; deletes move entry points; the
/// partitions survive a snapshot.
#[test]
fn namespace_partitions_search_deletes_and_snapshots() {
    let mut next = rng(5);
    let n = 3000u64;
    let config = IndexConfig {
        dim: DIM,
        threads: 1,
        partition_by_namespace: true,
        exact_threshold: 10,
        ..Default::default()
    };
    let mut idx = HybridIndex::new(config).unwrap();
    let ids: Vec<u64> = (1..=n).collect();
    let texts: Vec<String> = ids.iter().map(|i| format!("record {i}")).collect();
    let vecs: Vec<f32> = (0..n as usize * DIM)
        .map(|_| (next() % 2000) as f32 / 1000.0 - 1.0)
        .collect();
    let ts: Vec<i64> = ids.iter().map(|&i| i as i64).collect();
    let ns: Vec<String> = ids.iter().map(|&i| format!("a/u{}", i % 7)).collect();
    let batch = Batch {
        ids: &ids,
        texts: &texts,
        vectors: Some(&vecs),
        timestamps: &ts,
        namespaces: &ns,
        sessions: None,
        payloads: None,
        importance: None,
    };
    idx.add(&batch, false).unwrap();
    // Delete a third, including whatever nodes were entry points.
    let gone: Vec<u64> = (1..=n).filter(|i| i % 3 == 0).collect();
    idx.delete(&gone, false).unwrap();
    // Freed slots are reused by another namespace: links that pointed at them one way must not
    // carry a search across namespaces.
    let reuse: Vec<u64> = (n + 1..=n + 600).collect();
    let rtexts: Vec<String> = reuse.iter().map(|i| format!("reused {i}")).collect();
    let rvecs: Vec<f32> = (0..600 * DIM)
        .map(|_| (next() % 2000) as f32 / 1000.0 - 1.0)
        .collect();
    let rts: Vec<i64> = reuse.iter().map(|&i| i as i64).collect();
    let rns: Vec<String> = reuse.iter().map(|_| "a/reuse".to_owned()).collect();
    let rbatch = Batch {
        ids: &reuse,
        texts: &rtexts,
        vectors: Some(&rvecs),
        timestamps: &rts,
        namespaces: &rns,
        sessions: None,
        payloads: None,
        importance: None,
    };
    idx.add(&rbatch, false).unwrap();
    let exact = |idx: &HybridIndex, q: &[f32], ns: Option<&str>| -> Vec<u64> {
        let ns_of = |i: u64| {
            if i > n {
                "a/reuse".to_owned()
            } else {
                format!("a/u{}", i % 7)
            }
        };
        let mut all: Vec<(f32, u64)> = (1..=n + 600)
            .filter(|i| idx.contains(*i) && ns.is_none_or(|ns| ns_of(*i) == ns))
            .map(|i| {
                let v = idx.get(i).unwrap().vector.unwrap();
                let qn = q.iter().map(|x| x * x).sum::<f32>().sqrt();
                (v.iter().zip(q).map(|(a, b)| a * b).sum::<f32>() / qn, i)
            })
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        all.into_iter().take(10).map(|x| x.1).collect()
    };
    let check = |idx: &HybridIndex| {
        let (mut found, mut total) = (0, 0);
        for t in 0..40 {
            let q: Vec<f32> = (0..DIM).map(|i| ((i * 7 + t * 13) as f32).sin()).collect();
            for ns in [Some("a/u3"), Some("a/u0"), None] {
                let p = SearchParams {
                    k: 10,
                    mode: Mode::Vector,
                    filter: Filter {
                        namespace: ns.map(str::to_owned),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                let got: Vec<u64> = idx
                    .search(None, Some(&q), &p)
                    .unwrap()
                    .hits
                    .iter()
                    .map(|h| h.id)
                    .collect();
                assert_eq!(got.len(), 10);
                if let Some(ns) = ns {
                    assert!(
                        got.iter().all(|&i| i <= n && format!("a/u{}", i % 7) == ns),
                        "a hit crossed its namespace"
                    );
                }
                let truth = exact(idx, &q, ns);
                found += got.iter().filter(|i| truth.contains(i)).count();
                total += 10;
            }
        }
        let recall = found as f64 / total as f64;
        assert!(recall >= 0.97, "recall {recall}");
    };
    check(&idx);
    let dir = tempfile::tempdir().unwrap();
    {
        let mut o = open(dir.path());
        o.store.checkpoint(&[("p", &idx)], b"").unwrap();
    }
    let back = open(dir.path()).indexes.pop().unwrap().1;
    check(&back);
    assert_eq!(answers(&back), answers(&idx));
    // A namespace emptied entirely loses its graph; a new record there starts a fresh one.
    let u5: Vec<u64> = (1..=n).filter(|i| i % 7 == 5 && i % 3 != 0).collect();
    idx.delete(&u5, false).unwrap();
    let q: Vec<f32> = (0..DIM).map(|i| (i as f32).cos()).collect();
    let p = SearchParams {
        k: 5,
        mode: Mode::Vector,
        filter: Filter {
            namespace: Some("a/u5".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(idx.search(None, Some(&q), &p).unwrap().hits.is_empty());
    let batch = Batch {
        ids: &[99_999],
        texts: &["back again".to_owned()],
        vectors: Some(&q),
        timestamps: &[1],
        namespaces: &["a/u5".to_owned()],
        sessions: None,
        payloads: None,
        importance: None,
    };
    idx.add(&batch, false).unwrap();
    assert_eq!(idx.search(None, Some(&q), &p).unwrap().hits[0].id, 99_999);
}

#[test]
fn small_appends_land_in_zero_filled_space_that_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let wal_path = dir.path().join("wal-0000000000000000.log");
    let payloads: Vec<Vec<u8>> = (0..300u32)
        .map(|i| vec![(i % 251) as u8 + 1; 100 + i as usize])
        .collect();
    {
        let mut o = open(dir.path());
        for p in &payloads[..200] {
            o.store.append(&[p]).unwrap();
        }
        let logical = o.store.log_bytes();
        let size = std::fs::metadata(&wal_path).unwrap().len();
        assert!(
            size > logical,
            "space ahead of the appends is allocated ({size} vs {logical})"
        );
        assert!(size - logical <= 17 << 20);
    }
    let mut o = open(dir.path());
    assert_eq!(o.log, payloads[..200].to_vec());
    assert_eq!(
        o.store.recovery().torn_bytes,
        0,
        "pre-allocated zeros are not a torn tail"
    );
    for p in &payloads[200..] {
        o.store.append(&[p]).unwrap();
    }
    drop(o);
    // A crash mid-append inside the allocated space leaves garbage before zeros: cut, not replayed.
    let mut data = std::fs::read(&wal_path).unwrap();
    let end = open(dir.path()).store.log_bytes() as usize;
    assert!(data.len() > end + 64);
    data[end..end + 37].copy_from_slice(&[0xAB; 37]);
    std::fs::write(&wal_path, &data).unwrap();
    let o = open(dir.path());
    assert_eq!(o.log, payloads);
    assert_eq!(o.store.recovery().torn_bytes, data.len() - end);
    assert_eq!(std::fs::metadata(&wal_path).unwrap().len() as usize, end);
}
