//! The on-disk cache of tool embeddings ([`EmbeddingCache`]).
//!
//! # Location
//!
//! [`cache_dir`]: `$TOOLGATE_CACHE_DIR` when set, else
//! `$XDG_CACHE_HOME/toolgate/embeddings`, else
//! `$HOME/.cache/toolgate/embeddings`, else `toolgate-embeddings` under the
//! system's temporary folder. Deleting the folder is always safe: the
//! vectors are encoded again on the next compile.
//!
//! # Format
//!
//! One file per model, `<sha256 of the model files>.vec`: the 8 bytes
//! `TGEMB\x01\0\0`, the dimension (u32, little-endian), then records of a
//! 16-byte key (the first 16 bytes of the SHA-256 of the tool text) and
//! `dim` f32 values (little-endian). Records are only appended, each batch
//! in one `write`; a torn last record (a process stopped mid-write) is
//! ignored on reading, and a file with another header is replaced.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"TGEMB\x01\0\0";

/// The cache folder (see the module's documentation).
pub fn cache_dir() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = env("TOOLGATE_CACHE_DIR") {
        return d;
    }
    if let Some(d) = env("XDG_CACHE_HOME") {
        return d.join("toolgate").join("embeddings");
    }
    if let Some(h) = env("HOME") {
        return h.join(".cache").join("toolgate").join("embeddings");
    }
    std::env::temp_dir().join("toolgate-embeddings")
}

/// The cache key of a tool text: the first 16 bytes of its SHA-256.
pub fn text_key(text: &str) -> [u8; 16] {
    #[cfg(feature = "embed")]
    {
        use sha2::Digest;
        let d = sha2::Sha256::digest(text.as_bytes());
        let mut k = [0u8; 16];
        k.copy_from_slice(&d[..16]);
        k
    }
    #[cfg(not(feature = "embed"))]
    {
        // Without the runtime nothing is encoded or cached; a stable hash
        // keeps the type's contract.
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        text.hash(&mut h);
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&h.finish().to_le_bytes());
        k
    }
}

/// One model's cached tool vectors, read whole at open and appended to.
#[derive(Debug)]
pub struct EmbeddingCache {
    path: PathBuf,
    dim: usize,
    rows: HashMap<[u8; 16], Vec<f32>>,
}

impl EmbeddingCache {
    /// Opens (or creates) `dir/<digest>.vec` for vectors of `dim` floats.
    ///
    /// # Errors
    /// The folder cannot be created, or the file cannot be read or created.
    pub fn open(dir: &Path, digest: &str, dim: usize) -> Result<EmbeddingCache, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(format!("{digest}.vec"));
        let mut rows = HashMap::new();
        let fresh = match std::fs::read(&path) {
            Ok(bytes) => {
                let header_ok = bytes.len() >= 12
                    && &bytes[..8] == MAGIC
                    && u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize
                        == dim;
                if header_ok {
                    let rec = 16 + 4 * dim;
                    for r in bytes[12..].chunks_exact(rec) {
                        let mut k = [0u8; 16];
                        k.copy_from_slice(&r[..16]);
                        let v: Vec<f32> = r[16..]
                            .chunks_exact(4)
                            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                            .collect();
                        rows.insert(k, v);
                    }
                }
                !header_ok
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        if fresh {
            let mut head = MAGIC.to_vec();
            head.extend_from_slice(&(dim as u32).to_le_bytes());
            std::fs::write(&path, head).map_err(|e| format!("{}: {e}", path.display()))?;
        } else if let Ok(meta) = std::fs::metadata(&path) {
            // Cut a torn last record so that appends stay aligned.
            let rec = (16 + 4 * dim) as u64;
            let whole = 12 + (meta.len() - 12) / rec * rec;
            if whole != meta.len() {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                f.set_len(whole)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        Ok(EmbeddingCache { path, dim, rows })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many vectors the cache holds.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the cache holds no vector.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The vector of a text's key, if cached.
    pub fn get(&self, key: &[u8; 16]) -> Option<&[f32]> {
        self.rows.get(key).map(Vec::as_slice)
    }

    /// Adds `rows` (key, vector of `dim` floats; others are skipped) to the
    /// file, in one write, and to memory.
    ///
    /// # Errors
    /// The file cannot be opened or written.
    pub fn append(&mut self, rows: &[([u8; 16], Vec<f32>)]) -> Result<(), String> {
        let mut buf = Vec::with_capacity(rows.len() * (16 + 4 * self.dim));
        for (k, v) in rows {
            if v.len() != self.dim || self.rows.contains_key(k) {
                continue;
            }
            buf.extend_from_slice(k);
            for x in v {
                buf.extend_from_slice(&x.to_le_bytes());
            }
        }
        if buf.is_empty() {
            return Ok(());
        }
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        f.write_all(&buf)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        for (k, v) in rows {
            if v.len() == self.dim {
                self.rows.insert(*k, v.clone());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_survive_a_reopen_and_a_torn_record_is_cut() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut c = EmbeddingCache::open(dir.path(), "abc", 3).expect("open");
        assert!(c.is_empty());
        let (a, b) = (text_key("read a file"), text_key("send mail"));
        assert_ne!(a, b);
        c.append(&[(a, vec![1.0, 0.0, 0.0]), (b, vec![0.0, 0.6, 0.8])])
            .expect("append");
        // a wrong length is skipped
        c.append(&[(text_key("x"), vec![1.0])]).expect("append");
        let path = c.path().to_path_buf();
        drop(c);
        // a torn record after the two whole ones
        let mut bytes = std::fs::read(&path).expect("read");
        bytes.extend_from_slice(&[7u8; 9]);
        std::fs::write(&path, &bytes).expect("write");
        let mut c = EmbeddingCache::open(dir.path(), "abc", 3).expect("reopen");
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(&b), Some(&[0.0f32, 0.6, 0.8][..]));
        assert_eq!(c.get(&text_key("x")), None);
        let k = text_key("third");
        c.append(&[(k, vec![0.0, 0.0, 1.0])]).expect("append");
        let c = EmbeddingCache::open(dir.path(), "abc", 3).expect("reopen");
        assert_eq!(c.len(), 3, "the append after the cut stays aligned");
        assert_eq!(c.get(&k), Some(&[0.0f32, 0.0, 1.0][..]));
        // another dimension starts the file anew
        let c = EmbeddingCache::open(dir.path(), "abc", 4).expect("open");
        assert!(c.is_empty());
    }
}
