//! The tantivy schema of a knowledge base and its text analyzer: the one place that names the
//! index's fields, for the writer that creates an index and the reader that opens one.

use tantivy::Index;
use tantivy::schema::{
    FAST, Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};

const ANALYZER: &str = "kb";

#[derive(Debug, Clone, Copy)]
pub(super) struct Fields {
    pub(super) path: Field,
    pub(super) title: Field,
    pub(super) heading: Field,
    pub(super) body: Field,
    pub(super) start: Field,
    pub(super) end: Field,
    /// The passage's id, the key of its vector in the vectors file (a fast field).
    pub(super) id: Field,
}

pub(super) fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    // BM25 needs term frequencies, not positions: WithFreqs keeps the index small.
    let text = |stored: bool| {
        let options = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        if stored {
            options.set_stored()
        } else {
            options
        }
    };
    let fields = Fields {
        path: builder.add_text_field("path", STRING | STORED),
        title: builder.add_text_field("title", text(false)),
        heading: builder.add_text_field("heading", STORED),
        body: builder.add_text_field("body", text(true)),
        start: builder.add_u64_field("start", STORED),
        end: builder.add_u64_field("end", STORED),
        id: builder.add_u64_field("id", FAST),
    };
    (builder.build(), fields)
}

pub(super) fn register_analyzer(index: &Index) {
    let analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(Stemmer::new(Language::English))
        .build();
    index.tokenizers().register(ANALYZER, analyzer);
}

pub(super) fn fields_of(schema: &Schema) -> Result<Fields, String> {
    let get = |name: &str| {
        schema
            .get_field(name)
            .map_err(|_| format!("the index has no field \"{name}\""))
    };
    Ok(Fields {
        path: get("path")?,
        title: get("title")?,
        heading: get("heading")?,
        body: get("body")?,
        start: get("start")?,
        end: get("end")?,
        id: get("id")?,
    })
}
