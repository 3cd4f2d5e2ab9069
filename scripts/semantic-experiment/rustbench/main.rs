// Rough guide: cost of a static query embedding (20 token rows of a 30522 x D table, summed, normalised)
// plus 1,000 dot products against precomputed tool vectors. No dependencies; rustc -C opt-level=3.
use std::time::Instant;
fn lcg(s: &mut u64) -> f32 { *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); ((*s >> 33) as f32 / (1u64 << 31) as f32) - 0.5 }
fn run(d: usize, native: &str) {
    let v = 30522; let n = 1000; let mut s = 42u64;
    let table: Vec<f32> = (0..v * d).map(|_| lcg(&mut s)).collect();
    let tools: Vec<f32> = (0..n * d).map(|_| lcg(&mut s)).collect();
    let ids: Vec<usize> = (0..20).map(|i| (i * 7919 + 13) % v).collect();
    let mut scores = vec![0f32; n]; let mut times = Vec::new(); let mut sink = 0f32;
    for it in 0..5000 {
        let t = Instant::now();
        let mut q = vec![0f32; d];
        for &id in &ids { let row = &table[id * d..(id + 1) * d]; for k in 0..d { q[k] += row[k]; } }
        let norm = q.iter().map(|x| x * x).sum::<f32>().sqrt(); for x in q.iter_mut() { *x /= norm; }
        for j in 0..n {
            let r = &tools[j * d..(j + 1) * d];
            // 8 accumulators so the compiler vectorises
            let mut acc = [0f32; 8];
            for (a, b) in r.chunks_exact(8).zip(q.chunks_exact(8)) { for l in 0..8 { acc[l] += a[l] * b[l]; } }
            scores[j] = acc.iter().sum();
        }
        let e = t.elapsed().as_nanos() as f64 / 1000.0;
        sink += scores[it % n];
        if it >= 100 { times.push(e); }
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("{native} D={d}: 20-token query embed + 1000 dot products: median {:.1} us, p90 {:.1} us (sink {sink:.1})", times[times.len() / 2], times[times.len() * 9 / 10]);
}
fn main() { let tag = std::env::args().nth(1).unwrap_or_default(); for d in [128, 256, 384] { run(d, &tag); } }
