//! Search modes: how a query is compared with stored rows, which code kinds each applies to,
//! and which way its score ranks.

use crate::format::CodeKind;
use crate::scan::{Direction, Metric};

use super::error::SearchError;

/// How queries are compared with stored rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SearchMode {
    /// Binary codes: the query binarised with the index's model, ranked by Hamming distance
    /// (ITQ, Gong et al. TPAMI 2013, §3). Score: the distance (integer, smaller is better).
    Hamming,
    /// Binary codes, asymmetric: the query is projected but not binarised (see
    /// `search::asym` for the score), scored with the LUT-8 kernel. Smaller is better.
    Asym,
    /// PQ codes: asymmetric distance computation, squared L2 (Jégou et al. TPAMI 2011, eq. 13).
    /// Smaller is better.
    AdcL2,
    /// PQ codes: asymmetric inner product. Larger is better.
    AdcIp,
    /// Float codes (float32 / float16 stage): squared L2 between the projected query and the
    /// stored float code. Smaller is better.
    FloatL2,
    /// Float codes: inner product of the projected query and the stored float code. Larger is
    /// better.
    FloatDot,
    /// Stored vectors (any code kind; the index must keep them): exact squared L2 between the
    /// raw query and each stored vector. Smaller is better.
    ExactL2,
    /// Stored vectors: exact inner product. Larger is better.
    ExactDot,
}

/// Every mode with its CLI name, in the order `--help` lists them.
pub const MODE_NAMES: [(&str, SearchMode); 8] = [
    ("hamming", SearchMode::Hamming),
    ("asym", SearchMode::Asym),
    ("adc", SearchMode::AdcL2),
    ("adc-ip", SearchMode::AdcIp),
    ("float", SearchMode::FloatL2),
    ("float-ip", SearchMode::FloatDot),
    ("exact", SearchMode::ExactL2),
    ("exact-ip", SearchMode::ExactDot),
];

/// A mode name [`SearchMode::resolve`] does not know; its text lists the names it does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: expected one of {names}", names = mode_names())]
pub struct UnknownMode(pub String);

/// [`MODE_NAMES`]' names, comma-separated.
fn mode_names() -> String {
    MODE_NAMES
        .iter()
        .map(|m| m.0)
        .collect::<Vec<_>>()
        .join(", ")
}

impl SearchMode {
    /// The natural mode for a model's codes.
    pub fn default_for(kind: CodeKind) -> SearchMode {
        match kind {
            CodeKind::Binary => SearchMode::Hamming,
            CodeKind::Pq8 | CodeKind::Pq4 => SearchMode::AdcL2,
            CodeKind::Float32 | CodeKind::Float16 => SearchMode::FloatL2,
        }
    }

    /// The mode a front end's `mode` argument names ([`MODE_NAMES`] and the aliases of
    /// [`SearchMode::parse`]), or — `None` — the natural mode of `kind`'s codes: the one place
    /// a mode is chosen by name, for the CLI, Python and the tools alike.
    pub fn resolve(name: Option<&str>, kind: CodeKind) -> Result<SearchMode, UnknownMode> {
        match name {
            None => Ok(SearchMode::default_for(kind)),
            Some(n) => SearchMode::parse(n).ok_or_else(|| UnknownMode(n.to_string())),
        }
    }

    /// Parses a CLI name (see [`MODE_NAMES`]; `adc-l2`, `float-l2`, `float-dot`, `exact-l2`
    /// and `exact-dot` are accepted as aliases).
    pub fn parse(s: &str) -> Option<SearchMode> {
        let alias = match s {
            "adc-l2" => "adc",
            "float-l2" => "float",
            "float-dot" => "float-ip",
            "exact-l2" => "exact",
            "exact-dot" => "exact-ip",
            other => other,
        };
        MODE_NAMES
            .iter()
            .find(|(n, _)| *n == alias)
            .map(|&(_, m)| m)
    }

    /// The CLI name.
    pub fn name(self) -> &'static str {
        MODE_NAMES
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(n, _)| n)
    }

    /// Whether a larger score ranks first (the inner-product modes) — what a merge of
    /// several indexes' results (a sharded index) sorts by; [`SearchMode::direction`] as a
    /// flag.
    pub fn larger_is_better(self) -> bool {
        self.direction() == Direction::LargerIsBetter
    }

    /// Which way scores rank.
    pub fn direction(self) -> Direction {
        match self {
            SearchMode::AdcIp | SearchMode::FloatDot | SearchMode::ExactDot => {
                Direction::LargerIsBetter
            }
            _ => Direction::SmallerIsBetter,
        }
    }

    /// The exact metric re-ranking uses after this mode: inner product after the inner-product
    /// modes, squared L2 after every other (Hamming and asymmetric binary distances approximate
    /// Euclidean neighbours, ITQ §4).
    pub fn rerank_metric(self) -> Metric {
        match self.direction() {
            Direction::LargerIsBetter => Metric::Dot,
            Direction::SmallerIsBetter => Metric::L2Sq,
        }
    }

    /// True for the modes that read stored vectors rather than codes.
    pub fn is_exact(self) -> bool {
        matches!(self, SearchMode::ExactL2 | SearchMode::ExactDot)
    }

    /// Ok if this mode can search codes of `kind`, else an error naming the modes that can.
    pub fn check_applies(self, kind: CodeKind) -> Result<(), SearchError> {
        let ok = match self {
            SearchMode::Hamming | SearchMode::Asym => kind == CodeKind::Binary,
            SearchMode::AdcL2 | SearchMode::AdcIp => matches!(kind, CodeKind::Pq8 | CodeKind::Pq4),
            SearchMode::FloatL2 | SearchMode::FloatDot => {
                matches!(kind, CodeKind::Float32 | CodeKind::Float16)
            }
            SearchMode::ExactL2 | SearchMode::ExactDot => true,
        };
        if ok {
            return Ok(());
        }
        Err(SearchError::ModeNotApplicable {
            mode: self.name(),
            kind: kind.name(),
            hint: match kind {
                CodeKind::Binary => "binary codes take hamming or asym",
                CodeKind::Pq8 | CodeKind::Pq4 => "PQ codes take adc or adc-ip",
                CodeKind::Float32 | CodeKind::Float16 => "float codes take float or float-ip",
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_takes_a_name_or_the_codes_natural_mode_and_names_the_choices() {
        assert_eq!(
            SearchMode::resolve(None, CodeKind::Binary),
            Ok(SearchMode::Hamming)
        );
        assert_eq!(
            SearchMode::resolve(None, CodeKind::Pq4),
            Ok(SearchMode::AdcL2)
        );
        assert_eq!(
            SearchMode::resolve(Some("float-dot"), CodeKind::Binary),
            Ok(SearchMode::FloatDot)
        );
        let e = SearchMode::resolve(Some("cosine"), CodeKind::Binary).unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"cosine\": expected one of hamming, asym, adc, adc-ip, float, float-ip, exact, \
             exact-ip"
        );
    }

    #[test]
    fn names_round_trip_and_aliases() {
        for (n, m) in MODE_NAMES {
            assert_eq!(SearchMode::parse(n), Some(m));
            assert_eq!(m.name(), n);
        }
        assert_eq!(SearchMode::parse("adc-l2"), Some(SearchMode::AdcL2));
        assert_eq!(SearchMode::parse("float-dot"), Some(SearchMode::FloatDot));
        assert_eq!(SearchMode::parse("cosine"), None);
    }

    #[test]
    fn applicability() {
        assert!(SearchMode::Asym.check_applies(CodeKind::Binary).is_ok());
        let e = SearchMode::Asym
            .check_applies(CodeKind::Pq8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("asym does not apply to pq8"), "{e}");
        assert!(SearchMode::FloatL2.check_applies(CodeKind::Binary).is_err());
        assert!(SearchMode::ExactDot.check_applies(CodeKind::Pq4).is_ok());
        assert_eq!(SearchMode::AdcIp.rerank_metric(), Metric::Dot);
        assert_eq!(SearchMode::Hamming.rerank_metric(), Metric::L2Sq);
    }
}
