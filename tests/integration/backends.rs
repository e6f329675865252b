//! The backend seam as a user meets it: worlds on any backend, refused when the backend cannot
//! hold them; the twin's accessors only on the twin; device faults as backend-neutral errors;
//! events that belong to one world; a world dropped with work queued.

use std::time::{Duration, Instant};

use aiv_comm::backend::record::RecordingBackend;
use aiv_comm::{Config, Error, Event, World};

#[test]
fn a_world_needs_a_device_and_as_many_cores_as_ranks_per_rank() {
    let cfg = Config::default;
    match World::with_backend(2, cfg(), RecordingBackend::new(1, 48)) {
        Err(Error::Config(m)) => assert!(m.contains("2 ranks need 2 devices"), "{m}"),
        other => panic!("{:?}", other.map(|w| w.size())),
    }
    match World::with_backend(4, cfg(), RecordingBackend::new(4, 3)) {
        Err(Error::Config(m)) => assert!(m.contains("need 4 cores"), "{m}"),
        other => panic!("{:?}", other.map(|w| w.size())),
    }
    let w = World::with_backend(4, cfg(), RecordingBackend::new(4, 4)).unwrap();
    assert_eq!((w.size(), w.backend_name()), (4, "recording"));
}

#[test]
fn the_twins_accessors_answer_on_the_twin_only() {
    let rec = World::with_backend(1, Config::default(), RecordingBackend::new(1, 48)).unwrap();
    assert!(rec.twin().is_none() && rec.twin_device(0).is_none());
    let twin = World::sim(2).unwrap();
    assert_eq!(twin.backend_name(), "twin");
    assert!(twin.twin().is_some());
    assert_eq!(twin.twin_device(1).map(|d| d.rank()), Some(1));
    assert!(twin.twin_device(2).is_none());
}

#[test]
fn an_event_orders_the_streams_of_one_world_and_another_worlds_use_is_an_error() {
    let a = World::with_backend(1, Config::default(), RecordingBackend::new(1, 48)).unwrap();
    let b = World::with_backend(1, Config::default(), RecordingBackend::new(1, 48)).unwrap();
    let ev = Event::new("shared");
    let (sa, sb) = (a.comms()[0].stream(), b.comms()[0].stream());
    sa.post(&ev, "a");
    sa.synchronize().unwrap();
    sb.wait(&ev, "b");
    match sb.synchronize() {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("another world"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_world_dropped_with_work_queued_returns_promptly_on_any_backend() {
    let cfg = Config {
        exec_timeout: Some(Duration::from_secs(60)),
        ..Config::default()
    };
    let w = World::with_backend(1, cfg, RecordingBackend::new(1, 48)).unwrap();
    let c = &w.comms()[0];
    let s = c.create_stream("stuck").unwrap();
    // A wait for a post that never comes, running when the world is dropped, and work behind
    // it. (`started` tells another stream that `s` got to the wait; the pause lets it begin.)
    let started = Event::new("started");
    s.post(&started, "stuck");
    s.wait(&Event::new("never"), "stuck");
    let x = c.alloc(64).unwrap();
    s.copy(&x, &c.alloc(64).unwrap(), 64, "behind").unwrap();
    let t = c.create_stream("watcher").unwrap();
    t.wait(&started, "watcher");
    t.synchronize().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let t0 = Instant::now();

    drop(w);
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "the drop waited {:?}",
        t0.elapsed()
    );
    // The copy never ran: its output reads as such.
    assert!(matches!(x.to_vec::<u8>(), Err(Error::Poisoned { .. })));
}
