//! # aiv-comm
//!
//! Collective-communication kernels for the AIV vector cores of Ascend NPUs (Atlas A2 / 910B),
//! driven from Rust, and runnable on any Linux machine through the CPU twin of the AIV device
//! ([`ascendc_twin`]).
//!
//! * Device side (AscendC C++, compiled by build.rs): soft-sync primitives (`sync/aiv_sync.h`:
//!   Record, Wait, Record1vN, WaitNv1, RecordNv1, Wait1vN, BarrierAll, Record1vNAt,
//!   WaitNv1Source), the CpGM2GM copy engine (`kernel/cp_gm2gm.h`), and HCCL's AIV collective
//!   set: AllGather(V), AllReduce (one-shot, two-shot, push), ReduceScatter(V), Broadcast,
//!   AlltoAll(V/VC), Barrier, Send/Recv.
//! * Host side (this crate): a [`World`] of ranks on one backend ([`backend::Backend`]: the CPU
//!   twin, NPUs through the ACL runtime ([`backend::acl`]), or any other), one [`Communicator`]
//!   each, device buffers, streams of operations, the chunk planner ([`plan`]) that splits data
//!   to fit the HCCL buffer (200 MB by default, `HCCL_BUFFSIZE`), a fresh 64-bit tag for every
//!   launch, and errors that name what went wrong ([`Error`]). A rank may also be a process of
//!   its own ([`Communicator::from_rank`], [`Communicator::from_env`], over [`bootstrap`]).
//!
//! What a [`Communicator`] offers (collectives and sends take bytes + [`DataType`];
//! [`Communicator::typed`] gives them all but `all_reduce_hd` with element types and lengths,
//! [`typed`]):
//!
//! * collectives: [`all_gather`](Communicator::all_gather) (and
//!   [`all_gather_with`](Communicator::all_gather_with) an [`AllGatherAlgo`]),
//!   [`all_gather_v`](Communicator::all_gather_v), [`all_reduce`](Communicator::all_reduce)
//!   (and [`all_reduce_with`](Communicator::all_reduce_with) an [`AllReduceAlgo`]: one-shot,
//!   two-shot, halving-doubling, push), [`all_reduce_hd`](Communicator::all_reduce_hd),
//!   [`reduce_scatter`](Communicator::reduce_scatter),
//!   [`reduce_scatter_v`](Communicator::reduce_scatter_v),
//!   [`broadcast`](Communicator::broadcast),
//!   [`broadcast_in_place`](Communicator::broadcast_in_place),
//!   [`all_to_all`](Communicator::all_to_all), [`all_to_all_v`](Communicator::all_to_all_v),
//!   [`all_to_all_vc`](Communicator::all_to_all_vc), [`barrier`](Communicator::barrier) and
//!   [`batch_send_recv`](Communicator::batch_send_recv);
//! * point to point: [`send`](Communicator::send) and [`recv`](Communicator::recv);
//! * on a [`CommStream`] (the main one, [`Communicator::stream`], or one of
//!   [`Communicator::create_stream`]): sends and receives, copies, reductions, acks, data
//!   signals, and [`Event`]s between streams;
//! * window memory: [`register`](Communicator::register) and
//!   [`deregister`](Communicator::deregister);
//! * your own kernels: [`CommStream::launch`] and [`Communicator::launch_with_tags`].
//!
//! `docs/architecture.md` in the repository is the map: the layers, the path of one call, and
//! the invariants; `docs/` also holds the twin's, aiv-perf's, the processes' and the NPU's
//! pages.
//!
//! ```
//! use aiv_comm::{World, Config, DataType};
//! let world = World::sim_with(3, Config { buffer_bytes: Some(64 << 10), ..Config::default() }).unwrap();
//! let out = world.run(|comm| -> aiv_comm::Result<Vec<u32>> {
//!     let mine = vec![comm.rank(); 5];
//!     let send = comm.alloc_from(&mine)?;
//!     let recv = comm.alloc(5 * 4 * comm.size() as usize)?;
//!     comm.all_gather(&send, &recv, 5, DataType::I32)?;
//!     comm.synchronize()?;
//!     recv.to_vec::<u32>()
//! });
//! assert_eq!(out[2].as_ref().unwrap(), &[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
//! ```

#![warn(missing_docs)]

pub mod backend;
mod batch;
mod board;
pub mod bootstrap;
mod buffer;
mod check;
mod collectives;
mod collectives_v;
mod communicator;
mod config;
mod event;
pub use plan::{AllGatherAlgo, AllReduceAlgo};
mod diag;
pub mod dtype;
pub mod error;
pub mod ffi;
mod fingerprint;
mod hd;
mod launcher;
pub mod link;
mod op_queue;
pub mod plan;
mod poison;
mod process;
mod stream;
mod tags;
pub mod trace;
mod turns;
pub mod typed;
mod window;
pub mod world;

/// The user-kernel ABI: kernels built with `ascendc-build`, their argument blocks (packed as
/// the ACL runtime packs them) and device addresses, shared by every backend.
pub use ascendc_twin::{args, ArgBlock, GmAddr, Kernel};
pub use batch::SendRecvItem;
pub use buffer::{BufferAccess, DeviceBuffer};
pub use communicator::Communicator;
pub use config::{
    BackendChoice, Config, DEFAULT_BUFFER_BYTES, DEFAULT_EXEC_TIMEOUT, MIN_EXEC_TIMEOUT,
};
pub use dtype::{DataType, ReduceOp};
pub use error::{BootstrapError, Error, Fault, FaultKind, Result, StopCause};
pub use event::Event;
pub use link::{CommStream, SendRecvKind};
pub use process::DEFAULT_CONNECT_TIMEOUT;
pub use typed::{
    DeviceElement, DeviceRead, DeviceSlice, DeviceView, DeviceViewMut, DeviceWrite, P2p, Reducible,
    Typed, TypedStream,
};
pub use world::World;

/// The README's Rust examples, run as doctests (`cargo test --doc`), so that they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
