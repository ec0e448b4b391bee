//! Reading the IR of `docs/program-ir.md` section 2 from JSON.
//!
//! The JSON is walked by hand (not derived) so that every error names the
//! field it is about, as `tensors[2].data` or `body[1].body[3].args`, the way
//! the p10 parameters name theirs. Nothing here panics on bad input.

use std::fmt;

use serde_json::{Map, Value};

use crate::contract::{
    ModuleAttrs, ModuleKind, DEFAULT_RSS_EVERY, IR_VERSION, MAX_ELEMENTS, MAX_RANK,
};

/// Bad IR: which field, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrError {
    pub field: String,
    pub message: String,
}

impl IrError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        IrError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for IrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for IrError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Param,
    Input,
    /// A module's running state (batch norm's running mean and variance).
    Buffer,
}

/// A tensor's element type: float32, integer indices (read exactly from their
/// float32 data), or a mask (0/1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    Float,
    Int,
    Bool,
}

#[derive(Clone, Debug)]
pub struct RawTensor {
    pub name: String,
    pub role: Role,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
    pub module: Option<String>,
}

#[derive(Clone, Debug)]
pub struct RawModule {
    pub name: String,
    pub decl: ModuleAttrs,
}

#[derive(Clone, Debug)]
pub struct RawStmt {
    /// Where it is in the JSON, e.g. `body[1].body[3]`.
    pub path: String,
    pub index: u64,
    pub line: u64,
    pub op: String,
    pub args: Vec<String>,
    pub out: Option<String>,
    pub attrs: Map<String, Value>,
    pub body: Option<Vec<RawStmt>>,
}

impl RawStmt {
    /// `body[1].body[3] (index 7, line 9, op "matmul")`: how errors name a statement.
    pub fn describe(&self) -> String {
        format!(
            "{} (index {}, line {}, op {:?})",
            self.path, self.index, self.line, self.op
        )
    }

    pub fn error(&self, field: &str, message: impl Into<String>) -> IrError {
        let field = if field.is_empty() {
            self.describe()
        } else {
            format!("{}.{field}", self.describe())
        };
        IrError::new(field, message)
    }
}

#[derive(Clone, Debug, Default)]
pub struct RawSettings {
    pub checkpoints: Vec<u64>,
    pub rss_every: u64,
    pub track: Option<String>,
}

#[derive(Clone, Debug)]
pub struct RawProgram {
    pub tensors: Vec<RawTensor>,
    pub modules: Vec<RawModule>,
    pub body: Vec<RawStmt>,
    pub settings: RawSettings,
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, IrError> {
    value
        .as_object()
        .ok_or_else(|| IrError::new(path, format!("must be an object, got {}", kind(value))))
}

fn required<'a>(map: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a Value, IrError> {
    map.get(key)
        .ok_or_else(|| IrError::new(format!("{path}.{key}"), "missing"))
}

fn string(value: &Value, path: &str) -> Result<String, IrError> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| IrError::new(path, format!("must be a string, got {}", kind(value))))
}

fn parse_name(value: &Value, path: &str) -> Result<String, IrError> {
    let s = string(value, path)?;
    if s.is_empty() {
        return Err(IrError::new(path, "must be a non-empty name"));
    }
    Ok(s)
}

fn uint(value: &Value, path: &str) -> Result<u64, IrError> {
    value.as_u64().ok_or_else(|| {
        IrError::new(
            path,
            format!(
                "must be a non-negative integer, got {value} ({})",
                kind(value)
            ),
        )
    })
}

fn list<'a>(value: &'a Value, path: &str) -> Result<&'a Vec<Value>, IrError> {
    value
        .as_array()
        .ok_or_else(|| IrError::new(path, format!("must be a list, got {}", kind(value))))
}

/// Parses and checks the structure of the IR (not yet the names and the ops:
/// `compile` does that).
pub fn parse(json: &str) -> Result<RawProgram, IrError> {
    // Typed at the top so that tensor data goes straight into `Vec<f32>`:
    // a JSON value per number would leave megabytes of freed heap behind for
    // a 512x512 weight, which the run then reuses and the RSS samples miss.
    let root: TopJson = serde_json::from_str(json).map_err(|err| {
        IrError::new(
            "<json>",
            format!("not valid JSON or not an IR object: {err}"),
        )
    })?;
    let mut top = Map::new();
    for (key, value) in [
        ("ir_version", root.ir_version),
        ("modules", root.modules),
        ("body", root.body),
        ("settings", root.settings),
    ] {
        if let Some(value) = value {
            top.insert(key.to_owned(), value);
        }
    }
    let top = &top;

    let version = uint(
        required(top, "ir_version", "<root>").map_err(|_| IrError::new("ir_version", "missing"))?,
        "ir_version",
    )?;
    if version != IR_VERSION {
        return Err(IrError::new(
            "ir_version",
            format!("this interpreter reads version {IR_VERSION}, got {version}"),
        ));
    }

    let tensors = root
        .tensors
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, t)| parse_tensor(t, &format!("tensors[{i}]")))
        .collect::<Result<_, _>>()?;
    let modules = match top.get("modules") {
        None => Vec::new(),
        Some(v) => list(v, "modules")?
            .iter()
            .enumerate()
            .map(|(i, m)| parse_module(m, &format!("modules[{i}]")))
            .collect::<Result<_, _>>()?,
    };
    let body = parse_body(
        top.get("body")
            .ok_or_else(|| IrError::new("body", "missing"))?,
        "body",
    )?;
    let settings = match top.get("settings") {
        None | Some(Value::Null) => RawSettings {
            rss_every: DEFAULT_RSS_EVERY,
            ..RawSettings::default()
        },
        Some(v) => parse_settings(v)?,
    };
    Ok(RawProgram {
        tensors,
        modules,
        body,
        settings,
    })
}

fn parse_shape(value: &Value, path: &str) -> Result<Vec<usize>, IrError> {
    let items = list(value, path)?;
    if items.is_empty() || items.len() > MAX_RANK {
        return Err(IrError::new(
            path,
            format!(
                "rank must be 1 to {MAX_RANK} (burn's ranks are types; this interpreter has \
                 1..={MAX_RANK}), got {} dimensions",
                items.len()
            ),
        ));
    }
    let mut shape = Vec::with_capacity(items.len());
    let mut elements: u64 = 1;
    for (i, item) in items.iter().enumerate() {
        let dim = item.as_u64().filter(|&d| d >= 1).ok_or_else(|| {
            IrError::new(
                format!("{path}[{i}]"),
                format!("every dimension must be an integer >= 1, got {item}"),
            )
        })?;
        elements = elements.saturating_mul(dim);
        if elements > MAX_ELEMENTS {
            return Err(IrError::new(
                path,
                format!("at most {MAX_ELEMENTS} elements per tensor"),
            ));
        }
        shape.push(dim as usize);
    }
    Ok(shape)
}

fn parse_tensor(t: TensorJson, path: &str) -> Result<RawTensor, IrError> {
    let field = |key: &str, v: Option<Value>| -> Result<Value, IrError> {
        v.ok_or_else(|| IrError::new(format!("{path}.{key}"), "missing"))
    };
    let name = parse_name(&field("name", t.name)?, &format!("{path}.name"))?;
    let role_value = field("role", t.role)?;
    let role = match role_value.as_str() {
        Some("param") => Role::Param,
        Some("input") => Role::Input,
        Some("buffer") => Role::Buffer,
        _ => {
            return Err(IrError::new(
                format!("{path}.role"),
                format!("must be \"param\", \"input\" or \"buffer\", got {role_value}"),
            ))
        }
    };
    let dtype = match t.dtype {
        None | Some(Value::Null) => Dtype::Float,
        Some(v) => match v.as_str() {
            Some("float") => Dtype::Float,
            Some("int") => Dtype::Int,
            Some("bool") => Dtype::Bool,
            _ => {
                return Err(IrError::new(
                    format!("{path}.dtype"),
                    format!("must be \"float\", \"int\" or \"bool\", got {v}"),
                ))
            }
        },
    };
    if dtype != Dtype::Float && role != Role::Input {
        return Err(IrError::new(
            format!("{path}.dtype"),
            "int and bool tensors are inputs; params and buffers are float",
        ));
    }
    let shape = parse_shape(&field("shape", t.shape)?, &format!("{path}.shape"))?;
    let data_path = format!("{path}.data");
    let data = match t.data {
        None => return Err(IrError::new(data_path, "missing")),
        Some(Data::NotAList(what)) => {
            return Err(IrError::new(
                data_path,
                format!("must be a list, got {what}"),
            ))
        }
        Some(Data::Bad { index, message }) => {
            return Err(IrError::new(format!("{data_path}[{index}]"), message))
        }
        Some(Data::Floats(data)) => data,
    };
    let expected: usize = shape.iter().product();
    if data.len() != expected {
        return Err(IrError::new(
            data_path,
            format!(
                "{} values for shape {shape:?} ({expected} elements)",
                data.len()
            ),
        ));
    }
    let module = match t.module {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_name(&v, &format!("{path}.module"))?),
    };
    let exact = |bad: &dyn Fn(f32) -> bool, what: &str| -> Result<(), IrError> {
        match data.iter().position(|&v| bad(v)) {
            None => Ok(()),
            Some(i) => Err(IrError::new(
                format!("{data_path}[{i}]"),
                format!("{} is not {what}", data[i]),
            )),
        }
    };
    match dtype {
        Dtype::Float => {}
        Dtype::Int => exact(
            &|v| v.fract() != 0.0 || v.abs() >= (1u32 << 24) as f32,
            "an integer of magnitude below 2**24",
        )?,
        Dtype::Bool => exact(&|v| v != 0.0 && v != 1.0, "0 or 1")?,
    }
    Ok(RawTensor {
        name,
        role,
        dtype,
        shape,
        data,
        module,
    })
}

/// The top level, typed only where it matters (tensor data); the rest is
/// walked as JSON values for errors that name their field.
#[derive(serde::Deserialize)]
struct TopJson {
    ir_version: Option<Value>,
    tensors: Option<Vec<TensorJson>>,
    modules: Option<Value>,
    body: Option<Value>,
    settings: Option<Value>,
}

#[derive(serde::Deserialize)]
struct TensorJson {
    name: Option<Value>,
    role: Option<Value>,
    dtype: Option<Value>,
    shape: Option<Value>,
    data: Option<Data>,
    module: Option<Value>,
}

/// A tensor's `data`, read number by number into float32; a problem is kept
/// (with the element's index) to be reported with the field's path.
enum Data {
    Floats(Vec<f32>),
    NotAList(&'static str),
    Bad { index: usize, message: String },
}

impl<'de> serde::Deserialize<'de> for Data {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Data, D::Error> {
        deserializer.deserialize_any(DataVisitor)
    }
}

struct DataVisitor;

impl<'de> serde::de::Visitor<'de> for DataVisitor {
    type Value = Data;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of numbers")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Data, A::Error> {
        let mut data = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element::<Value>()? {
            let index = data.len();
            let problem = match item.as_f64() {
                None => Some(format!("must be a number, got {}", kind(&item))),
                Some(x) if !(x as f32).is_finite() => {
                    Some(format!("must be a finite float32 value, got {x}"))
                }
                Some(x) => {
                    data.push(x as f32);
                    None
                }
            };
            if let Some(message) = problem {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                return Ok(Data::Bad { index, message });
            }
        }
        Ok(Data::Floats(data))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Data, E> {
        Ok(Data::NotAList("a bool"))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Data, E> {
        Ok(Data::NotAList("a number"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Data, E> {
        Ok(Data::NotAList("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Data, E> {
        Ok(Data::NotAList("a number"))
    }
    fn visit_str<E>(self, _: &str) -> Result<Data, E> {
        Ok(Data::NotAList("a string"))
    }
    fn visit_unit<E>(self) -> Result<Data, E> {
        Ok(Data::NotAList("null"))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Data, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Data::NotAList("an object"))
    }
}

fn parse_module(value: &Value, path: &str) -> Result<RawModule, IrError> {
    let map = object(value, path)?;
    let name = parse_name(required(map, "name", path)?, &format!("{path}.name"))?;
    let kind_value = required(map, "kind", path)?;
    let kind = kind_value
        .as_str()
        .and_then(ModuleKind::from_name)
        .ok_or_else(|| {
            IrError::new(
                format!("{path}.kind"),
                format!("must be one of {}, got {kind_value}", ModuleKind::names()),
            )
        })?;
    for key in map.keys() {
        if !["name", "kind", "attrs"].contains(&key.as_str()) {
            return Err(IrError::new(
                format!("{path}.{key}"),
                "unknown key (a module has name, kind and attrs)",
            ));
        }
    }
    let empty = Map::new();
    let attrs = match map.get("attrs") {
        None | Some(Value::Null) => &empty,
        Some(v) => object(v, &format!("{path}.attrs"))?,
    };
    let reader = AttrReader::new(attrs, format!("{path}.attrs"), kind.name());
    let decl = ModuleAttrs::read(kind, &reader)?;
    Ok(RawModule { name, decl })
}

fn parse_body(value: &Value, path: &str) -> Result<Vec<RawStmt>, IrError> {
    list(value, path)?
        .iter()
        .enumerate()
        .map(|(i, s)| parse_stmt(s, &format!("{path}[{i}]")))
        .collect()
}

fn parse_stmt(value: &Value, path: &str) -> Result<RawStmt, IrError> {
    let map = object(value, path)?;
    let index = uint(required(map, "index", path)?, &format!("{path}.index"))?;
    let line = match map.get("line") {
        None | Some(Value::Null) => 0,
        Some(v) => uint(v, &format!("{path}.line"))?,
    };
    let op = parse_name(required(map, "op", path)?, &format!("{path}.op"))?;
    let args = match map.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => {
            let field = format!("{path}.args");
            list(v, &field)?
                .iter()
                .enumerate()
                .map(|(i, a)| parse_name(a, &format!("{field}[{i}]")))
                .collect::<Result<_, _>>()?
        }
    };
    let out = match map.get("out") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_name(v, &format!("{path}.out"))?),
    };
    let attrs = match map.get("attrs") {
        None | Some(Value::Null) => Map::new(),
        Some(v) => object(v, &format!("{path}.attrs"))?.clone(),
    };
    let body = match map.get("body") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_body(v, &format!("{path}.body"))?),
    };
    Ok(RawStmt {
        path: path.to_owned(),
        index,
        line,
        op,
        args,
        out,
        attrs,
        body,
    })
}

fn parse_settings(value: &Value) -> Result<RawSettings, IrError> {
    let map = object(value, "settings")?;
    let checkpoints = match map.get("checkpoints") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => {
            let mut previous = 0;
            let mut points = Vec::new();
            for (i, item) in list(v, "settings.checkpoints")?.iter().enumerate() {
                let field = format!("settings.checkpoints[{i}]");
                let point = uint(item, &field)?;
                if point < 1 {
                    return Err(IrError::new(field, "checkpoints are iterations from 1"));
                }
                if point <= previous {
                    return Err(IrError::new(
                        field,
                        format!("must be strictly increasing, got {point} after {previous}"),
                    ));
                }
                previous = point;
                points.push(point);
            }
            points
        }
    };
    let rss_every = match map.get("rss_every") {
        None | Some(Value::Null) => DEFAULT_RSS_EVERY,
        Some(v) => uint(v, "settings.rss_every")?,
    };
    let track = match map.get("track") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_name(v, "settings.track")?),
    };
    Ok(RawSettings {
        checkpoints,
        rss_every,
        track,
    })
}

/// Typed access to attributes (a statement's `attrs`, or a module
/// declaration's keys), with errors naming the attribute. The generated
/// structs of `crate::contract::attrs` read through it.
pub struct AttrReader<'a> {
    map: &'a Map<String, Value>,
    /// How errors name where the attributes are, e.g. `body[2] (index 2, line 5, op "sgd").attrs`.
    path: String,
    /// What takes them, for messages: `"sgd"`, `"Linear"`.
    owner: &'a str,
}

impl<'a> AttrReader<'a> {
    /// A statement's `attrs`.
    pub fn of_stmt(stmt: &'a RawStmt) -> Self {
        AttrReader {
            map: &stmt.attrs,
            path: format!("{}.attrs", stmt.describe()),
            owner: &stmt.op,
        }
    }

    /// Attributes held in `map` at `path`, taken by `owner`.
    pub fn new(map: &'a Map<String, Value>, path: impl Into<String>, owner: &'a str) -> Self {
        AttrReader {
            map,
            path: path.into(),
            owner,
        }
    }

    /// Fails on an attribute not in `known` (a misspelt hyperparameter
    /// must not be silently ignored).
    pub fn only(&self, known: &[&str]) -> Result<(), IrError> {
        for key in self.map.keys() {
            if !known.contains(&key.as_str()) {
                let expected = if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                };
                return Err(self.err(
                    key,
                    format!(
                        "unknown attribute for {:?} (it takes: {expected})",
                        self.owner
                    ),
                ));
            }
        }
        Ok(())
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn err(&self, key: &str, message: String) -> IrError {
        IrError::new(format!("{}.{key}", self.path), message)
    }

    /// An attribute whose value the table allows but the statement's other attributes do not.
    pub fn invalid(&self, key: &str, message: &str) -> IrError {
        self.err(key, message.to_owned())
    }

    /// An attribute that must be given and is not.
    pub fn missing(&self, key: &str, kind: &str) -> IrError {
        self.err(key, format!("missing (a {kind})"))
    }

    /// A string that is not one of the choices.
    pub fn not_one_of(&self, key: &str, value: &str, choices: &[&str]) -> IrError {
        self.err(
            key,
            format!("must be one of {}, got {value:?}", choices.join(", ")),
        )
    }

    /// Checks a number against a range: each bound is (value, exclusive);
    /// `text` says the range in words (`> 0`, `>= -64 and <= 64`).
    pub fn range(
        &self,
        key: &str,
        value: f64,
        low: Option<(f64, bool)>,
        high: Option<(f64, bool)>,
        text: &str,
    ) -> Result<(), IrError> {
        let below = low.is_some_and(|(l, exclusive)| value < l || (exclusive && value == l));
        let above = high.is_some_and(|(h, exclusive)| value > h || (exclusive && value == h));
        if below || above {
            return Err(self.err(key, format!("must be {text}, got {value}")));
        }
        Ok(())
    }

    pub fn float(&self, key: &str) -> Result<Option<f64>, IrError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() => Ok(Some(x)),
                _ => Err(self.err(key, format!("must be a finite number, got {v}"))),
            },
        }
    }

    pub fn int(&self, key: &str) -> Result<Option<i64>, IrError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.err(key, format!("must be an integer, got {v}"))),
        }
    }

    pub fn bool(&self, key: &str) -> Result<Option<bool>, IrError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.err(key, format!("must be a bool, got {v}"))),
        }
    }

    /// A string of 1 to 200 characters.
    pub fn text(&self, key: &str) -> Result<Option<String>, IrError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_str() {
                Some(s) if !s.is_empty() && s.chars().count() <= 200 => Ok(Some(s.to_owned())),
                Some(_) => Err(self.err(key, "must be a string of 1 to 200 characters".into())),
                None => Err(self.err(key, format!("must be a string, got {v}"))),
            },
        }
    }

    pub fn int_list(&self, key: &str) -> Result<Option<Vec<i64>>, IrError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let bad = || self.err(key, format!("must be a list of integers, got {v}"));
        v.as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|item| item.as_i64().ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}
