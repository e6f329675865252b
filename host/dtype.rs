//! Element types and reduce operations.

use std::fmt;
use std::str::FromStr;

use crate::ffi;

/// Element type of collective data.
///
/// Every type can be moved (AllGather, Send/Recv); only the types the Atlas A2 atomic store units
/// support can be reduced (AllReduce): f32, f16, bf16, i32, i16, i8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DataType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
    /// 32-bit signed integer.
    I32,
    /// 16-bit signed integer.
    I16,
    /// 8-bit signed integer.
    I8,
    /// 8-bit unsigned integer (data movement only).
    U8,
    /// 64-bit signed integer (data movement only).
    I64,
    /// 64-bit unsigned integer (data movement only).
    U64,
    /// IEEE binary64 (data movement only).
    F64,
    /// 16-bit unsigned integer (data movement only).
    U16,
    /// 32-bit unsigned integer (data movement only).
    U32,
}

impl DataType {
    /// Every type, in a fixed order.
    pub const ALL: [DataType; 12] = [
        DataType::F32,
        DataType::F16,
        DataType::Bf16,
        DataType::I32,
        DataType::I16,
        DataType::I8,
        DataType::U8,
        DataType::I64,
        DataType::U64,
        DataType::F64,
        DataType::U16,
        DataType::U32,
    ];

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DataType::F32 | DataType::I32 | DataType::U32 => 4,
            DataType::F16 | DataType::Bf16 | DataType::I16 | DataType::U16 => 2,
            DataType::I8 | DataType::U8 => 1,
            DataType::I64 | DataType::U64 | DataType::F64 => 8,
        }
    }

    /// The kernels' dtype code (`AivDtype`) if the type can be reduced on the device.
    pub fn reduce_code(self) -> Option<u32> {
        match self {
            DataType::F32 => Some(ffi::AIV_DT_F32),
            DataType::F16 => Some(ffi::AIV_DT_F16),
            DataType::Bf16 => Some(ffi::AIV_DT_BF16),
            DataType::I32 => Some(ffi::AIV_DT_I32),
            DataType::I16 => Some(ffi::AIV_DT_I16),
            DataType::I8 => Some(ffi::AIV_DT_I8),
            _ => None,
        }
    }

    /// True for floating-point types.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            DataType::F32 | DataType::F16 | DataType::Bf16 | DataType::F64
        )
    }

    /// The nccl-tests / hccl_test name (`float`, `half`, `bfloat16`, `int32`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DataType::F32 => "float",
            DataType::F16 => "half",
            DataType::Bf16 => "bfloat16",
            DataType::I32 => "int32",
            DataType::I16 => "int16",
            DataType::I8 => "int8",
            DataType::U8 => "uint8",
            DataType::I64 => "int64",
            DataType::U64 => "uint64",
            DataType::F64 => "double",
            DataType::U16 => "uint16",
            DataType::U32 => "uint32",
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DataType {
    type Err = String;
    /// Accepts hccl_test names (fp32, fp16, bfp16, int32, uint16, ...), nccl-tests names (float,
    /// half, bfloat16, ...) and Rust names (f32, bf16, u16, ...), in any case.
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "fp32" | "float" | "float32" | "f32" => DataType::F32,
            "fp16" | "half" | "float16" | "f16" => DataType::F16,
            "bf16" | "bfp16" | "bfloat16" => DataType::Bf16,
            "int32" | "i32" => DataType::I32,
            "int16" | "i16" => DataType::I16,
            "int8" | "i8" => DataType::I8,
            "uint8" | "u8" => DataType::U8,
            "int64" | "i64" => DataType::I64,
            "uint64" | "u64" => DataType::U64,
            "fp64" | "double" | "float64" | "f64" => DataType::F64,
            "uint16" | "u16" => DataType::U16,
            "uint32" | "u32" => DataType::U32,
            _ => {
                return Err(format!(
                "unknown data type `{s}` (fp32 fp16 bfp16 int32 int16 int8 uint8 uint16 uint32 int64 uint64 fp64)"
            ))
            }
        })
    }
}

/// Reduce operation of AllReduce.
///
/// `Prod` exists so that callers can ask for it and get a clear error: the A2 atomic store units
/// have no product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product (not supported on the device).
    Prod,
}

impl ReduceOp {
    /// The kernels' op code (`AivReduceOp`), if the device supports the op.
    pub fn code(self) -> Option<u32> {
        match self {
            ReduceOp::Sum => Some(ffi::AIV_OP_SUM),
            ReduceOp::Max => Some(ffi::AIV_OP_MAX),
            ReduceOp::Min => Some(ffi::AIV_OP_MIN),
            ReduceOp::Prod => None,
        }
    }

    /// Lower-case name (`sum`, `max`, `min`, `prod`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
        }
    }
}

impl fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ReduceOp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "sum" => ReduceOp::Sum,
            "max" => ReduceOp::Max,
            "min" => ReduceOp::Min,
            "prod" => ReduceOp::Prod,
            _ => return Err(format!("unknown reduce op `{s}` (sum max min)")),
        })
    }
}
