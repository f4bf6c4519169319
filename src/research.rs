//! The zero-shot class prior of Mensink et al. (TPAMI 2013, §6): the prior mean of a new class
//! from its relatives in the class hierarchy (eq. 29), the MAP mean that mixes it with a few
//! images (eq. 30) and the choice of eq. 30's weight m on held-out images — for studying the
//! prior on its own (`codedb classes add --validation`, the zero-shot protocols of the lab).
//! An application does not need this module: [`Index::add_new_classes`](crate::Index::add_new_classes)
//! applies the prior itself ([`NewClass`](crate::NewClass) names the relatives and the weight).

pub use crate::classes::{
    DEFAULT_PRIOR_CANDIDATES, PriorWeightChoice, choose_prior_weight, map_mean, zero_shot_prior,
};
