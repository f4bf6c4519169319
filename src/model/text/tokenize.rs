//! Tokenisation of captions, tags and queries (PAMIR §3: a text is a bag of words).
//!
//! A text is lower-cased (full Unicode case mapping, `char::to_lowercase`) and split on every
//! character that is not alphabetic (`char::is_alphabetic`: letters of any script, so "Café"
//! gives "café" and "東京タワー" stays one word); digits, punctuation and white space separate
//! words and are dropped. Word order and repetitions are kept: the term frequency counts them.

/// The words of `text`, lower-cased, in order.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphabetic() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::tokenize;

    #[test]
    fn lower_cases_and_splits_on_non_letters() {
        assert_eq!(
            tokenize("Red apple, RED-apple2green  "),
            ["red", "apple", "red", "apple", "green"]
        );
        assert_eq!(tokenize("Café ÉTÉ straße"), ["café", "été", "straße"]);
        assert_eq!(tokenize("東京タワー 42"), ["東京タワー"]);
        assert!(tokenize(" 12 -- ! ").is_empty());
        assert!(tokenize("").is_empty());
    }
}
