//! The study's keys that take a value of more than one shape: a level
//! list or range (`cores`, `concurrency`, `rate`) and a server (a recipe's
//! name or a table). serde's untagged enums would refuse a wrong value
//! with "data did not match any variant", which names neither the key
//! nor what it takes; these say both.

use std::fmt;

use anyhow::{anyhow, bail, Context};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ListOrRange {
    List(Vec<u32>),
    /// `"10..1000 step 10"`, or `"auto"` for cores.
    Text(String),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ServerEntry {
    /// A recipe by name.
    Recipe(String),
    /// A recipe under another name, or a user's own command.
    Table {
        name: String,
        recipe: Option<String>,
        command: Option<Vec<String>>,
    },
}

/// Parses `"10..1000 step 10"` (inclusive of both ends when on the grid).
pub fn parse_range(s: &str) -> anyhow::Result<Vec<u32>> {
    let err = || format!("range {s:?}: expected \"FROM..TO\" or \"FROM..TO step N\"");
    let (range, step) = match s.split_once("step") {
        Some((r, st)) => (r.trim(), st.trim().parse::<u32>().with_context(err)?),
        None => (s.trim(), 1),
    };
    let (a, b) = range.split_once("..").with_context(err)?;
    let a: u32 = a.trim().parse().with_context(err)?;
    let b: u32 = b.trim().trim_start_matches('=').parse().with_context(err)?;
    if step == 0 || a > b {
        bail!("range {s:?}: needs FROM <= TO and a step above 0");
    }
    let v: Vec<u32> = (a..=b).step_by(step as usize).collect();
    if v.len() > 10_000 {
        bail!(
            "range {s:?} has {} values; a sweep that long is surely a typo",
            v.len()
        );
    }
    Ok(v)
}

impl ListOrRange {
    /// The values, a range expanded; `key` names the key in errors.
    pub fn values(&self, key: &str) -> anyhow::Result<Vec<u32>> {
        match self {
            ListOrRange::Text(t) => parse_range(t).map_err(|e| anyhow!("{key}: {e}")),
            ListOrRange::List(v) => Ok(v.clone()),
        }
    }
}

/// Refuses a value given twice in `key`'s list: results are stored `by`
/// it (workload name, core count, level), so the steps of the two would
/// be mixed.
pub(super) fn once<T: PartialEq + fmt::Debug>(
    key: &str,
    values: &[T],
    by: &str,
) -> anyhow::Result<()> {
    match values
        .iter()
        .enumerate()
        .find(|(i, v)| values[..*i].contains(v))
    {
        Some((_, v)) => bail!(
            "{key}: {v:?} is listed twice; steps are stored by {by}, so the two would be mixed"
        ),
        None => Ok(()),
    }
}

/// A level key: its name, what one of its values is, and what it takes.
struct Levels {
    key: &'static str,
    one: &'static str,
    takes: &'static str,
}

const CORES: Levels = Levels {
    key: "cores",
    one: "a core count",
    takes: "core counts of 1 or more: a list such as [1, 2, 4], a range such as \"1..4\", \
            or \"auto\"",
};
const CONCURRENCY: Levels = Levels {
    key: "concurrency",
    one: "a level",
    takes: "levels of 1 or more: a list such as [10, 50, 100] or a range such as \
            \"10..1000 step 10\"",
};
const RATE: Levels = Levels {
    key: "rate",
    one: "a rate",
    takes: "rates of 1 or more requests per second: a list such as [1000, 2000] or a range \
            such as \"1000..10000 step 1000\"",
};

pub(super) fn cores<'de, D: Deserializer<'de>>(d: D) -> Result<ListOrRange, D::Error> {
    d.deserialize_any(&CORES)
}

pub(super) fn concurrency<'de, D: Deserializer<'de>>(d: D) -> Result<ListOrRange, D::Error> {
    d.deserialize_any(&CONCURRENCY)
}

pub(super) fn some_concurrency<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<ListOrRange>, D::Error> {
    d.deserialize_any(&CONCURRENCY).map(Some)
}

pub(super) fn some_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ListOrRange>, D::Error> {
    d.deserialize_any(&RATE).map(Some)
}

impl Levels {
    fn refuse<E: de::Error>(&self, found: impl fmt::Display, one: &str) -> E {
        E::custom(format_args!(
            "{}: {found} is not {one}; give {}",
            self.key, self.takes
        ))
    }
}

/// The whole value: a list, or a range as text.
impl<'de> Visitor<'de> for &Levels {
    type Value = ListOrRange;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.takes)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ListOrRange, E> {
        Ok(ListOrRange::Text(v.to_string()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ListOrRange, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Element(self))? {
            out.push(v);
        }
        Ok(ListOrRange::List(out))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ListOrRange, E> {
        Err(self.refuse(v, "a list or a range"))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ListOrRange, E> {
        Err(self.refuse(v, "a list or a range"))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ListOrRange, E> {
        Err(self.refuse(v, "a list or a range"))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ListOrRange, E> {
        Err(self.refuse(v, "a list or a range"))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<ListOrRange, A::Error> {
        Err(self.refuse("a table", "a list or a range"))
    }
}

/// One value of a level list.
struct Element<'a>(&'a Levels);

impl<'de> DeserializeSeed<'de> for Element<'_> {
    type Value = u32;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Element<'_> {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.0.takes)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u32, E> {
        u32::try_from(v).map_err(|_| self.0.refuse(v, self.0.one))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u32, E> {
        u32::try_from(v).map_err(|_| self.0.refuse(v, self.0.one))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u32, E> {
        Err(self.0.refuse(v, self.0.one))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<u32, E> {
        Err(self.0.refuse(v, self.0.one))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u32, E> {
        Err(self.0.refuse(format_args!("{v:?}"), self.0.one))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<u32, A::Error> {
        Err(self.0.refuse("a list", self.0.one))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<u32, A::Error> {
        Err(self.0.refuse("a table", self.0.one))
    }
}

/// A server as a table: unknown keys are refused, as everywhere else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerTable {
    name: String,
    #[serde(default)]
    recipe: Option<String>,
    #[serde(default)]
    command: Option<Vec<String>>,
}

struct Server;

const SERVER_TAKES: &str = "a recipe's name such as \"nginx\", or a table such as \
                            { name = \"mine\", recipe = \"nginx\" } or \
                            { name = \"mine\", command = [\"/usr/local/bin/mysrv\", \"{{port}}\"] }";

fn not_a_server<E: de::Error>(found: impl fmt::Display) -> E {
    E::custom(format_args!(
        "servers: {found} is not a server; give {SERVER_TAKES}"
    ))
}

impl<'de> Deserialize<'de> for ServerEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ServerEntry, D::Error> {
        d.deserialize_any(Server)
    }
}

impl<'de> Visitor<'de> for Server {
    type Value = ServerEntry;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{SERVER_TAKES}")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ServerEntry, E> {
        Ok(ServerEntry::Recipe(v.to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ServerEntry, A::Error> {
        let t = ServerTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(ServerEntry::Table {
            name: t.name,
            recipe: t.recipe,
            command: t.command,
        })
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ServerEntry, E> {
        Err(not_a_server(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ServerEntry, E> {
        Err(not_a_server(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ServerEntry, E> {
        Err(not_a_server(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ServerEntry, E> {
        Err(not_a_server(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<ServerEntry, A::Error> {
        Err(not_a_server("a list"))
    }
}

#[cfg(test)]
mod tests {
    use crate::study::Study;
    use throng_servers::Recipes;

    /// The study's text with `keys` in place of its servers, cores and
    /// levels, and `rest` after them.
    fn refused(keys: &str, rest: &str) -> String {
        let text = format!("name = 'x'\nworkloads = ['tiny']\n{keys}\n{rest}");
        match Study::parse(&text, &Recipes::builtin()) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => format!("{e:#}"),
        }
    }

    const CORES: &str = "give core counts of 1 or more: a list such as [1, 2, 4], a range \
                         such as \"1..4\", or \"auto\"";
    const LEVELS: &str = "give levels of 1 or more: a list such as [10, 50, 100] or a range \
                          such as \"10..1000 step 10\"";

    #[test]
    fn a_wrongly_typed_level_or_server_says_what_the_key_takes() {
        let servers = "servers = ['nginx']\n";
        for (keys, rest, want) in [
            (
                "cores = [1]\nconcurrency = [-5]",
                "",
                format!("line 5, column 16: concurrency: -5 is not a level; {LEVELS}"),
            ),
            (
                "cores = [1]\nconcurrency = [10, 2.5]",
                "",
                format!("line 5, column 20: concurrency: 2.5 is not a level; {LEVELS}"),
            ),
            (
                "cores = [1]\nconcurrency = [10, \"50\"]",
                "",
                format!("line 5, column 20: concurrency: \"50\" is not a level; {LEVELS}"),
            ),
            (
                "cores = [1]\nconcurrency = [4294967296]",
                "",
                format!("line 5, column 16: concurrency: 4294967296 is not a level; {LEVELS}"),
            ),
            (
                "cores = [1]\nconcurrency = 10",
                "",
                format!("line 5, column 15: concurrency: 10 is not a list or a range; {LEVELS}"),
            ),
            (
                "cores = [true]\nconcurrency = [10]",
                "",
                format!("line 4, column 10: cores: true is not a core count; {CORES}"),
            ),
            (
                "cores = { n = 1 }\nconcurrency = [10]",
                "",
                format!("line 4, column 9: cores: a table is not a list or a range; {CORES}"),
            ),
            (
                "cores = [1]\nconcurrency = [10]",
                "[workload.tiny]\nconcurrency = [[10]]\n",
                format!("line 7, column 16: concurrency: a list is not a level; {LEVELS}"),
            ),
            (
                "cores = [1]\nconcurrency = [10]",
                "[load]\nrate = [-1000]\n",
                "line 7, column 9: rate: -1000 is not a rate; give rates of 1 or more requests \
                 per second: a list such as [1000, 2000] or a range such as \
                 \"1000..10000 step 1000\""
                    .to_string(),
            ),
        ] {
            assert_eq!(
                refused(&format!("{servers}{keys}"), rest),
                want,
                "{keys} {rest}"
            );
        }
        let levels = "cores = [1]\nconcurrency = [10]";
        assert_eq!(
            refused(&format!("servers = ['nginx', 42]\n{levels}"), ""),
            "line 3, column 21: servers: 42 is not a server; give a recipe's name such as \
             \"nginx\", or a table such as { name = \"mine\", recipe = \"nginx\" } or \
             { name = \"mine\", command = [\"/usr/local/bin/mysrv\", \"{{port}}\"] }"
        );
        assert_eq!(
            refused(
                &format!("servers = [{{ name = 'n', recipe = 'nginx', cmd = 1 }}]\n{levels}"),
                ""
            ),
            "line 3, column 44: unknown field `cmd`, expected one of `name`, `recipe`, `command`"
        );
        // A range is still text, refused by the key when it is not one.
        assert_eq!(
            refused(&format!("{servers}cores = '1..x'\nconcurrency = [10]"), ""),
            "cores: range \"1..x\": expected \"FROM..TO\" or \"FROM..TO step N\""
        );
    }

    #[test]
    fn a_workload_core_count_or_level_listed_twice_is_refused() {
        let study = |workloads: &str, keys: &str, rest: &str| {
            let text =
                format!("name = 'x'\nservers = ['nginx']\nworkloads = {workloads}\n{keys}\n{rest}");
            match Study::parse(&text, &Recipes::builtin()) {
                Ok(_) => panic!("accepted: {text}"),
                Err(e) => format!("{e:#}"),
            }
        };
        let levels = "cores = [1]\nconcurrency = [10]";
        assert_eq!(
            study("['tiny', 'page', 'tiny']", levels, ""),
            "workloads: \"tiny\" is listed twice; steps are stored by workload name, so the two \
             would be mixed"
        );
        assert_eq!(
            study("['tiny']", "cores = [1, 1]\nconcurrency = [10]", ""),
            "cores: 1 is listed twice; steps are stored by core count, so the two would be mixed"
        );
        assert_eq!(
            study("['tiny']", "cores = [1]\nconcurrency = [10, 50, 10]", ""),
            "concurrency: 10 is listed twice; steps are stored by level, so the two would be \
             mixed"
        );
        assert_eq!(
            study(
                "['tiny']",
                levels,
                "[workload.tiny]\nconcurrency = [4, 4]\n"
            ),
            "[workload.tiny] concurrency: 4 is listed twice; steps are stored by level, so the \
             two would be mixed"
        );
        // Servers were refused so already, by the names they are stored by.
        assert_eq!(
            refused(
                "servers = ['nginx', { name = 'nginx-tuned', recipe = 'nginx' }]\n\
                 cores = [1]\nconcurrency = [10]",
                "profiles = ['defaults', 'tuned']\n"
            ),
            "server \"nginx-tuned\" is listed twice"
        );
    }
}
