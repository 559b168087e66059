//! Tokenizer shared by indexing and querying.
//!
//! * Unicode words, lowercased.
//! * Numbers, versions, ports and code identifiers stay whole (`8080`, `v18.2.0`, `node.js`,
//!   `err_connection_refused`): `.`, `-`, `_`, `:` and `/` join two word characters. A compound
//!   also yields its parts that contain a letter (`node`, `js`), which helps recall when the
//!   query spells only a part.
//! * Runs of CJK characters become overlapping character bigrams (a lone character stays
//!   itself), as Lucene's CJK analyzer does, so Chinese needs no dictionary.
//! * Optional English stop words (Lucene's default set) and Snowball stemming.

use rust_stemmers::{Algorithm, Stemmer};

/// Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`.
const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// How text is cut into terms. The same options must serve an index's documents and queries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenizerOptions {
    pub stem: bool,
    pub stopwords: bool,
}

pub struct Tokenizer {
    options: TokenizerOptions,
    stemmer: Option<Stemmer>,
}

impl Clone for Tokenizer {
    fn clone(&self) -> Self {
        Tokenizer::new(self.options)
    }
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("options", &self.options)
            .finish()
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // Extensions B..F, compatibility supplement
}

fn is_word(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !is_cjk(c)
}

/// Characters that keep an identifier whole when a word character is on both sides.
fn is_joiner(c: char) -> bool {
    matches!(c, '.' | '-' | '_' | ':' | '/')
}

impl Tokenizer {
    pub fn new(options: TokenizerOptions) -> Self {
        let stemmer = options.stem.then(|| Stemmer::create(Algorithm::English));
        Tokenizer { options, stemmer }
    }

    pub fn options(&self) -> TokenizerOptions {
        self.options
    }

    /// All terms of `text`, in order, duplicates kept (term frequency matters to BM25).
    pub fn tokenize(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_token(text, |t| out.push(t.to_owned()));
        out
    }

    /// Calls `emit` for each term without allocating a vector of strings.
    pub fn for_each_token(&self, text: &str, mut emit: impl FnMut(&str)) {
        let mut buf = String::new();
        let mut push = |raw: &str, buf: &mut String| {
            buf.clear();
            for c in raw.chars() {
                buf.extend(c.to_lowercase());
            }
            if self.options.stopwords && STOP_WORDS.contains(&buf.as_str()) {
                return;
            }
            match &self.stemmer {
                Some(s) => emit(&s.stem(buf)),
                None => emit(buf),
            }
        };
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let end_of = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i].1;
            if is_cjk(c) {
                let start = i;
                while i < chars.len() && is_cjk(chars[i].1) {
                    i += 1;
                }
                if i - start == 1 {
                    push(&text[chars[start].0..end_of(i)], &mut buf);
                } else {
                    for j in start..i - 1 {
                        push(&text[chars[j].0..end_of(j + 2)], &mut buf);
                    }
                }
            } else if is_word(c) {
                let start = i;
                let mut compound = false;
                i += 1;
                loop {
                    if i < chars.len() && is_word(chars[i].1) {
                        compound |= chars[i].1 == '_';
                        i += 1;
                    } else if i + 1 < chars.len()
                        && is_joiner(chars[i].1)
                        && is_word(chars[i + 1].1)
                    {
                        compound = true;
                        i += 2;
                    } else {
                        break;
                    }
                }
                let word = &text[chars[start].0..end_of(i)];
                let word = word.trim_matches('_');
                if word.is_empty() {
                    continue;
                }
                push(word, &mut buf);
                if compound {
                    for part in word.split(|c: char| is_joiner(c)) {
                        if part != word && part.chars().any(char::is_alphabetic) {
                            push(part, &mut buf);
                        }
                    }
                }
            } else {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<String> {
        Tokenizer::new(TokenizerOptions::default()).tokenize(text)
    }

    #[test]
    fn identifiers_stay_whole_with_parts() {
        assert_eq!(toks("node.js"), ["node.js", "node", "js"]);
        assert_eq!(toks("port 8080."), ["port", "8080"]);
        assert_eq!(toks("v18.2.0"), ["v18.2.0", "v18"]);
        assert_eq!(
            toks("ERR_CONNECTION_REFUSED"),
            ["err_connection_refused", "err", "connection", "refused"]
        );
        assert_eq!(toks("192.168.1.1:3306"), ["192.168.1.1:3306"]);
    }

    #[test]
    fn cjk_bigrams() {
        assert_eq!(toks("容器"), ["容器"]);
        assert_eq!(toks("启动服务"), ["启动", "动服", "服务"]);
        assert_eq!(toks("在 Docker 容器"), ["在", "docker", "容器"]);
    }

    #[test]
    fn stopwords_and_stemming() {
        let t = Tokenizer::new(TokenizerOptions {
            stem: true,
            stopwords: true,
        });
        assert_eq!(t.tokenize("The containers are running"), ["contain", "run"]);
    }

    #[test]
    fn punctuation_only_yields_nothing() {
        assert!(toks("... --- !!! __").is_empty());
    }
}
