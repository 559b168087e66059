//! Dot products on f32 with SIMD chosen at run time (AVX-512F, else AVX2+FMA on x86_64,
//! portable otherwise).
//!
//! Both metrics reduce to a dot product: cosine stores unit vectors, so similarity = dot.

/// A dot-product kernel, picked once per index by [`dot_kernel`].
pub type DotFn = fn(&[f32], &[f32]) -> f32;

/// The fastest dot product this CPU supports.
pub fn dot_kernel() -> DotFn {
    kernels().1
}

/// Name of the kernel [`dot_kernel`] picks, for stats and bug reports.
pub fn kernel_name() -> &'static str {
    kernels().0
}

/// Whether AVX-512 code may run: the CPU has AVX-512F and `TRIMEM_SIMD=avx2` does not hold
/// it back (to A/B the AVX2 kernels on an AVX-512 machine). Decided once per process, for
/// every kernel that has an AVX-512 build (dot products here, the filter's bitmap pass).
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx512_allowed() -> bool {
    static ALLOWED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALLOWED.get_or_init(|| {
        std::env::var("TRIMEM_SIMD").map_or(true, |v| v != "avx2")
            && std::arch::is_x86_feature_detected!("avx512f")
    })
}

fn kernels() -> (&'static str, DotFn) {
    #[cfg(target_arch = "x86_64")]
    {
        if avx512_allowed() {
            return ("avx512f", dot_avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return ("avx2+fma", dot_avx2);
        }
    }
    ("portable", dot_portable)
}

/// Eight independent accumulators let the compiler vectorise without `-ffast-math`.
pub fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0.0f32; 8];
    let chunks = a.len() / 8;
    for i in 0..chunks {
        for j in 0..8 {
            acc[j] += a[i * 8 + j] * b[i * 8 + j];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for i in chunks * 8..a.len() {
        sum += a[i] * b[i];
    }
    sum
}

#[cfg(target_arch = "x86_64")]
fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: only returned by `dot_kernel` after detecting AVX2 and FMA.
    unsafe { dot_avx2_impl(a, b) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2_impl(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    // Four accumulators hide the FMA latency.
    let mut s0 = _mm256_setzero_ps();
    let mut s1 = _mm256_setzero_ps();
    let mut s2 = _mm256_setzero_ps();
    let mut s3 = _mm256_setzero_ps();
    let mut i = 0;
    while i + 32 <= n {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), s0);
        s1 = _mm256_fmadd_ps(
            _mm256_loadu_ps(pa.add(i + 8)),
            _mm256_loadu_ps(pb.add(i + 8)),
            s1,
        );
        s2 = _mm256_fmadd_ps(
            _mm256_loadu_ps(pa.add(i + 16)),
            _mm256_loadu_ps(pb.add(i + 16)),
            s2,
        );
        s3 = _mm256_fmadd_ps(
            _mm256_loadu_ps(pa.add(i + 24)),
            _mm256_loadu_ps(pb.add(i + 24)),
            s3,
        );
        i += 32;
    }
    while i + 8 <= n {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), s0);
        i += 8;
    }
    let s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    let hi = _mm256_extractf128_ps(s, 1);
    let lo = _mm256_castps256_ps128(s);
    let q = _mm_add_ps(hi, lo);
    let q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    let q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
    let mut sum = _mm_cvtss_f32(q);
    while i < n {
        sum += *pa.add(i) * *pb.add(i);
        i += 1;
    }
    sum
}

#[cfg(target_arch = "x86_64")]
fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: only returned by `dot_kernel` after detecting AVX-512F.
    unsafe { dot_avx512_impl(a, b) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn dot_avx512_impl(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    // Two accumulators hide the FMA latency at 384 dims (six steps of 64 floats would leave
    // four accumulators mostly idle); a masked load takes the tail, so no scalar loop.
    let mut s0 = _mm512_setzero_ps();
    let mut s1 = _mm512_setzero_ps();
    let mut i = 0;
    while i + 32 <= n {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)), s0);
        s1 = _mm512_fmadd_ps(
            _mm512_loadu_ps(pa.add(i + 16)),
            _mm512_loadu_ps(pb.add(i + 16)),
            s1,
        );
        i += 32;
    }
    while i < n {
        let m: __mmask16 = if n - i >= 16 {
            0xFFFF
        } else {
            (1u16 << (n - i)) - 1
        };
        s0 = _mm512_fmadd_ps(
            _mm512_maskz_loadu_ps(m, pa.add(i)),
            _mm512_maskz_loadu_ps(m, pb.add(i)),
            s0,
        );
        i += 16;
    }
    _mm512_reduce_add_ps(_mm512_add_ps(s0, s1))
}

/// Hint the CPU to start loading `ptr`'s cache line (a no-op where unsupported).
#[inline(always)]
pub fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(ptr as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_agree_with_naive_sum() {
        for n in [0usize, 1, 7, 8, 31, 32, 33, 384, 1000] {
            let a: Vec<f32> = (0..n)
                .map(|i| ((i * 7919) % 97) as f32 / 97.0 - 0.5)
                .collect();
            let b: Vec<f32> = (0..n)
                .map(|i| ((i * 104729) % 89) as f32 / 89.0 - 0.5)
                .collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            let mut kernels = vec![dot_portable as DotFn, dot_kernel()];
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                kernels.push(dot_avx2);
            }
            for k in kernels {
                assert!((k(&a, &b) as f64 - naive).abs() < 1e-4, "n={n}");
            }
        }
    }
}
