//! Unit tests of the BM25 index and its analysis.

use rust_stemmers::Stemmer;

use super::*;
use crate::parse::policy::{Bm25Fields, CjkMode, KeywordParams};

fn analyzer() -> Analyzer {
    Analyzer::new(&KeywordParams {
        min_length: 2,
        max_count: 100,
        stop_words: vec!["the".into(), "a".into()],
        letters_only: false,
        cjk: CjkMode::Bigrams,
    })
}

fn params(split: bool, stem: bool) -> Bm25Params {
    Bm25Params {
        k1: 1.2,
        b: 0.75,
        fields: Bm25Fields {
            name: 1.0,
            description: 1.0,
            parameters: 1.0,
            parameter_descriptions: 0.0,
            keywords: 0.0,
        },
        split_identifiers: split,
        stemmer: stem.then_some(rust_stemmers::Algorithm::English),
        score_floor: 0.0,
        relevance: None,
        expansion: None,
        query_counting: QueryCounting::Distinct,
        clauses: None,
    }
}

#[test]
fn identifiers_split_and_stem() {
    let an = analyzer();
    let p = params(true, true);
    let a = Bm25Analyzer::new(&p, &an);
    let mut out = Vec::new();
    a.terms(
        "getWeatherForecast HTTPServer user_ids v2 the 数据库",
        &mut out,
    );
    assert_eq!(
        out,
        vec![
            "get", "weather", "forecast", "http", "server", "user", "id", "数据", "据库"
        ]
    );
    let p = params(false, false);
    let a = Bm25Analyzer::new(&p, &an);
    let mut out = Vec::new();
    a.terms("get_weather Running", &mut out);
    assert_eq!(out, vec!["get_weather", "running"]);
}

#[test]
fn memoized_documents_equal_plain_ones() {
    let an = analyzer();
    for (split, stem) in [(true, true), (false, false), (true, false)] {
        let p = params(split, stem);
        let plain = Bm25Analyzer::new(&p, &an);
        let memo = Bm25Analyzer::new(&p, &an).memoized();
        let schema = serde_json::json!({"properties": {
            "user_id_2024": {"description": "the user's id, 2024"},
            "数据库": {"items": {"properties": {"getWeather": {}}}}}});
        let kws = ["Weather".to_string(), "数据库 v2".to_string()];
        for name in ["get_weather_12", "getWeather 12 a", "x"] {
            let t = ToolText {
                name,
                description: "Running the weather reports, 12 of them",
                input_schema: Some(&schema),
                keywords: &kws,
            };
            // Twice through the memo: the second run reads what the first stored.
            for _ in 0..2 {
                assert_eq!(Bm25Doc::of(&memo, &t), Bm25Doc::of(&plain, &t));
            }
        }
    }
    // Digit runs skip lowercasing and stemming: every stemmer leaves them as they are.
    for alg in [
        rust_stemmers::Algorithm::English,
        rust_stemmers::Algorithm::French,
        rust_stemmers::Algorithm::German,
        rust_stemmers::Algorithm::Russian,
        rust_stemmers::Algorithm::Arabic,
    ] {
        assert_eq!(Stemmer::create(alg).stem("2024"), "2024");
    }
}

#[test]
fn owned_documents_index_like_borrowed_ones() {
    let an = analyzer();
    for expansion in [
        None,
        Some(ExpansionParams {
            neighbours: 3,
            weight: 0.5,
            min_similarity: 0.0,
            min_shared: 1,
        }),
    ] {
        let p = Bm25Params {
            expansion,
            ..params(true, true)
        };
        let a = Bm25Analyzer::new(&p, &an).memoized();
        let docs: Vec<Bm25Doc> = [
            ("get_weather", "Weather forecast for a city"),
            ("read_file", "Read a file from the disk"),
            ("city_map", "A map of the city, with the weather"),
        ]
        .iter()
        .map(|(name, description)| {
            let t = ToolText {
                name,
                description,
                ..Default::default()
            };
            Bm25Doc::of(&a, &t)
        })
        .collect();
        let borrowed = Bm25Index::from_docs(&p, &docs.iter().collect::<Vec<_>>());
        let owned = Bm25Index::from_doc_iter(&p, docs.into_iter().map(Cow::Owned));
        assert_eq!(borrowed.terms, owned.terms);
        assert_eq!(borrowed.postings, owned.postings);
        assert_eq!(borrowed.doc_len, owned.doc_len);
        assert_eq!(borrowed.avg_len, owned.avg_len);
        assert_eq!(borrowed.idf, owned.idf);
        assert_eq!(borrowed.related, owned.related);
        assert!(!owned.postings.iter().all(Vec::is_empty));
        if p.expansion.is_some() {
            assert!(owned.related.iter().any(|r| !r.is_empty()));
        }
    }
}

#[test]
fn scores_match_hand_computation() {
    let an = analyzer();
    let p = params(false, false);
    let docs = [
        ToolText {
            name: "weather",
            description: "forecast",
            ..Default::default()
        },
        ToolText {
            name: "stock",
            description: "price price",
            ..Default::default()
        },
    ];
    let idx = Bm25Index::build(&p, &an, &docs);
    // N = 2, df(weather) = 1: idf = ln(1 + 1.5/1.5) = ln 2; len 2 and 3, avg 2.5.
    let s = idx.normalized(&an, &["weather".into()]);
    assert_eq!(s, vec![1.0, 0.0]);
    let ids = idx.query_ids(&an, &["price".into()]);
    let mut raw = Vec::new();
    idx.raw_scores(&ids, &mut raw);
    let norm = 1.0 - 0.75 + 0.75 * 3.0 / 2.5;
    let want = 2f64.ln() * 2.0 * 2.2 / (2.0 + 1.2 * norm);
    assert!((raw[1] - want).abs() < 1e-12, "{} vs {want}", raw[1]);
    assert_eq!(raw[0], 0.0);
}

#[test]
fn weighted_queries_keep_the_largest_weight_and_scale_linearly() {
    let an = analyzer();
    let p = params(false, false);
    let docs = [
        ToolText {
            name: "weather",
            description: "forecast city",
            ..Default::default()
        },
        ToolText {
            name: "stock",
            description: "price",
            ..Default::default()
        },
    ];
    let idx = Bm25Index::build(&p, &an, &docs);
    let now: Vec<String> = vec!["weather".into()];
    let before: Vec<String> = vec!["weather".into(), "price".into(), "unknown".into()];
    let q = idx.weighted_query(&an, &[(&now, 1.0), (&before, 0.25)]);
    let id = |t: &str| idx.terms[t];
    assert_eq!(q, {
        let mut v = vec![(id("weather"), 1.0), (id("price"), 0.25)];
        v.sort_by_key(|x| x.0);
        v
    });
    let mut full = Scored::default();
    idx.score(&[(id("price"), 1.0)], &mut full);
    let mut quarter = Scored::default();
    idx.score(&[(id("price"), 0.25)], &mut quarter);
    assert!((quarter.raw[1] - 0.25 * full.raw[1]).abs() < 1e-12);
    // A weight of 0 drops the turn.
    assert!(idx.weighted_query(&an, &[(&now, 0.0)]).is_empty());
}

#[test]
fn coverage_is_the_idf_weighted_share_of_the_query() {
    let an = analyzer();
    let mut p = params(false, false);
    p.relevance = Some(crate::parse::selection::RelevanceParams {
        min_score: crate::parse::policy::Sp::new(0.0, 0..0),
        min_score_idf: crate::parse::policy::Sp::new(0.0, 0..0),
        min_coverage: crate::parse::policy::Sp::new(0.5, 0..0),
        min_share: crate::parse::policy::Sp::new(0.0, 0..0),
        query_terms: QueryTerms::Known,
    });
    let docs = [
        ToolText {
            name: "weather",
            description: "forecast",
            ..Default::default()
        },
        ToolText {
            name: "stock",
            description: "forecast",
            ..Default::default()
        },
        ToolText {
            name: "news",
            ..Default::default()
        },
    ];
    let idx = Bm25Index::build(&p, &an, &docs);
    let q = idx.weighted_query(&an, &[(&["weather".into(), "forecast".into()], 1.0)]);
    let mut s = Scored::default();
    idx.score(&q, &mut s);
    let (iw, if_) = (
        idx.idf[idx.terms["weather"] as usize],
        idx.idf[idx.terms["forecast"] as usize],
    );
    assert!((s.coverage(&p, 0) - 1.0).abs() < 1e-12);
    assert!((s.coverage(&p, 1) - if_ / (iw + if_)).abs() < 1e-12);
    assert_eq!(s.coverage(&p, 2), 0.0);
    // `weather` is rarer than `forecast`: the stock tool covers less than half.
    assert!(!s.passes(&p, 1) && s.passes(&p, 0));
    assert_eq!(s.normalized(&p, 0), 1.0);
    assert_eq!(s.normalized(&p, 1), 0.0);
}

#[test]
fn unknown_terms_count_with_query_terms_all() {
    let an = analyzer();
    let mut p = params(false, false);
    let relevance = |terms| crate::parse::selection::RelevanceParams {
        min_score: crate::parse::policy::Sp::new(0.0, 0..0),
        min_score_idf: crate::parse::policy::Sp::new(0.0, 0..0),
        min_coverage: crate::parse::policy::Sp::new(0.0, 0..0),
        min_share: crate::parse::policy::Sp::new(0.0, 0..0),
        query_terms: terms,
    };
    let docs = [
        ToolText {
            name: "weather",
            description: "forecast",
            ..Default::default()
        },
        ToolText {
            name: "stock",
            description: "price",
            ..Default::default()
        },
    ];
    let query: Vec<String> = vec!["weather".into(), "paris".into(), "tomorrow".into()];
    p.relevance = Some(relevance(QueryTerms::Known));
    let idx = Bm25Index::build(&p, &an, &docs);
    let q = idx.query(&an, &[(&query, 1.0)]);
    assert_eq!(q.unknown_mass, 0.0);
    let mut s = Scored::default();
    idx.score_query(&q.terms, q.unknown_mass, &mut s);
    // Known terms only: `weather` is the whole query.
    assert!((s.coverage(&p, 0) - 1.0).abs() < 1e-12);
    let share = s.share(&p, 0);
    assert!(share > 0.0 && share < 1.0, "{share}");
    assert!((share - s.raw[0] / (idx.idf[idx.terms["weather"] as usize] * 2.2)).abs() < 1e-12);

    // All terms: the two unknown ones weigh as a term one tool of two has.
    p.relevance = Some(relevance(QueryTerms::All));
    let idx = Bm25Index::build(&p, &an, &docs);
    // repeated and remembered unknown terms count once, with their largest weight
    let q = idx.query(&an, &[(&query, 1.0), (&["paris".into()], 0.5)]);
    let idf1 = idx.idf_of_df(1);
    assert_eq!(idf1, idx.idf[idx.terms["weather"] as usize]);
    assert!((q.unknown_mass - 2.0 * idf1).abs() < 1e-12);
    idx.score_query(&q.terms, q.unknown_mass, &mut s);
    assert!((s.coverage(&p, 0) - 1.0 / 3.0).abs() < 1e-12);
    assert!((s.share(&p, 0) - share / 3.0).abs() < 1e-12);
    assert_eq!(s.coverage(&p, 1), 0.0);
    // An empty query covers nothing.
    idx.score_query(&[], 0.0, &mut s);
    assert_eq!((s.coverage(&p, 0), s.share(&p, 0)), (0.0, 0.0));
}

#[test]
fn floor_caps_weak_matches() {
    let an = analyzer();
    let mut p = params(false, false);
    p.score_floor = 100.0;
    let docs = [ToolText {
        name: "weather",
        ..Default::default()
    }];
    let idx = Bm25Index::build(&p, &an, &docs);
    let s = idx.normalized(&an, &["weather".into()]);
    assert!(s[0] > 0.0 && s[0] < 0.1);
}

#[test]
fn occurrences_count_each_repetition_distinct_counts_once() {
    let an = analyzer();
    let mut p = params(false, false);
    let docs = [
        ToolText {
            name: "weather",
            description: "forecast",
            ..Default::default()
        },
        ToolText {
            name: "stock",
            description: "price",
            ..Default::default()
        },
    ];
    let idx = Bm25Index::build(&p, &an, &docs);
    let id = |t: &str| idx.terms[t];
    let msg: Vec<String> = ["weather", "price", "weather", "weather"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let before: Vec<String> = vec!["price".into(), "price".into()];
    let turns: &[(&[String], f64)] = &[(&msg, 1.0), (&before, 0.5)];
    let mut want = vec![(id("weather"), 1.0), (id("price"), 1.0)];
    want.sort_by_key(|x| x.0);
    assert_eq!(idx.weighted_query(&an, turns), want);
    p.query_counting = QueryCounting::Occurrences;
    let idx = idx.with_params(&p);
    // weather: 3 x 1; price: max(1 x 1, 2 x 0.5) = 1.
    let mut want = vec![(id("weather"), 3.0), (id("price"), 1.0)];
    want.sort_by_key(|x| x.0);
    assert_eq!(idx.weighted_query(&an, turns), want);
    // The raw score scales with the count.
    let mut once = Scored::default();
    idx.score(&[(id("weather"), 1.0)], &mut once);
    let mut thrice = Scored::default();
    let q = idx.weighted_query(&an, &[(&msg, 1.0)]);
    idx.score(&q, &mut thrice);
    assert!((thrice.raw[0] - 3.0 * once.raw[0]).abs() < 1e-12);
}
