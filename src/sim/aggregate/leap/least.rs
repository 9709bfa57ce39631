//! The least-outstanding balancer's split of a step's count
//! (`LeastOutstanding::split`) and the round-robin deal (`even_deal`).
//! Pure: unit-tested against the round-robin deal on equal instances and
//! against a simulated join-the-shortest-queue balancer on unequal ones.

/// The least-outstanding balancer's split of a step's count, approximated
/// from what a step knows: each instance's serving slots (slot-seconds
/// served in the step over its length: a booting or draining worker adds
/// none), its fluid backlog, and the step's offered load.
///
/// Why this model. The exact balancer sends each request to the instance
/// with the fewest outstanding requests, so it keeps their outstanding
/// counts level (within one of each other; ties go round-robin). With a
/// common level `L`, instance `i` completes `min(L, s_i) / E[S]` requests a
/// second, and what it is sent over a step is what it completes: its share
/// is `E[min(L, s_i)] / sum_j E[min(L, s_j)]`. The level is that of the
/// fleet's total outstanding `N` spread evenly (`L = N / n`), and `N` is a
/// birth-death chain: up at the arrival rate, down at `sum_i min(N / n,
/// s_i) / E[S]`. Its stationary law is computed in one pass over `N` (at
/// most `n x max s_i` terms, a geometric tail beyond). Equal instances get
/// equal shares; an instance with fewer serving slots gets less only as
/// far as the level reaches its slots, which is what the exact balancer
/// does: at low load nobody queues and the split is even, at high load the
/// short instance's queue is longer and the others take its overflow.
/// (Dealing evenly instead gives that instance's other workers the whole
/// round-robin share: they queue more and leak faster.) At or over the
/// fleet's capacity every instance is saturated and shares follow slots.
///
/// A fluid backlog is outstanding work the balancer sees: the shares are
/// water-filled over it (`a_i = max(0, theta x w_i - backlog_i)`, summing
/// to the count), so an instance with a backlog gets only what brings it
/// level with the others. The counts are whole requests by largest
/// remainder, ties dealt from the round-robin pointer `start`.
///
/// Equal instances (the same slots and backlog) get the round-robin deal
/// exactly (`total / n` each, the remainder to the instances from
/// `start`), so a healthy fleet splits as round-robin does.
pub struct LeastOutstanding {
    /// Instance indices by serving slots, ascending.
    order: Vec<u32>,
    /// Per instance: its weight `E[min(L, s_i)]`, then its real count.
    share: Vec<f64>,
    /// Per instance: the deal's remainder order key.
    frac: Vec<f64>,
    /// Per instance: what the deals so far owe it (its real counts minus
    /// its whole ones, summed over the steps), so its cumulative count
    /// stays within one of its cumulative share whatever the step's size.
    credit: Vec<f64>,
    /// Per instance: its expected fraction of the fleet's arrival rate
    /// (the level model's weight over their sum; `1 / n` when equal),
    /// without the backlogs' water-fill or the whole counts' noise: the
    /// rate its wait estimate needs.
    rate_share: Vec<f64>,
}

impl LeastOutstanding {
    pub fn new(instances: usize) -> Self {
        LeastOutstanding {
            order: Vec::with_capacity(instances),
            share: vec![0.0; instances],
            frac: vec![0.0; instances],
            credit: vec![0.0; instances],
            rate_share: vec![0.0; instances],
        }
    }

    /// Each instance's expected fraction of the fleet's arrival rate as of
    /// the last `split` (summing to 1).
    pub fn rate_share(&self) -> &[f64] {
        &self.rate_share
    }

    /// Splits `total` requests over the instances into `out` (one count
    /// each, summing to `total`). `offered` is the step's load in slots
    /// (arrival rate x mean service time), `slots` each instance's serving
    /// slots, `backlog` its fluid backlog, `start` the round-robin pointer.
    pub fn split(
        &mut self,
        total: u64,
        offered: f64,
        slots: &[f64],
        backlog: &[f64],
        start: usize,
        out: &mut [u64],
    ) {
        let n = slots.len();
        debug_assert!(n > 0 && backlog.len() == n && out.len() == n && start < n);
        // Sized to this call (a fleet's count never changes: no allocation).
        self.share.resize(n, 0.0);
        self.frac.resize(n, 0.0);
        self.credit.resize(n, 0.0);
        self.rate_share.clear();
        self.rate_share.resize(n, 1.0 / n as f64);
        let equal =
            slots.iter().all(|&s| s == slots[0]) && backlog.iter().all(|&q| q == backlog[0]);
        if equal || slots.iter().all(|&s| s <= 0.0) {
            self.deal_evenly(total, start, out);
            return;
        }
        self.weights(offered, slots);
        let w_sum: f64 = self.share.iter().sum();
        if w_sum > 0.0 && w_sum.is_finite() {
            for (r, w) in self.rate_share.iter_mut().zip(&self.share) {
                *r = w / w_sum;
            }
        }
        if !self.water_fill(total as f64, backlog) {
            self.deal_evenly(total, start, out);
            return;
        }
        for (a, c) in self.share.iter_mut().zip(&self.credit) {
            *a += c;
        }
        self.deal(total, start, out);
        for ((c, a), &o) in self.credit.iter_mut().zip(&self.share).zip(out.iter()) {
            *c = a - o as f64;
        }
    }

    /// The round-robin deal, with the credits it leaves (an even share
    /// minus the whole count): they carry the pointer's turn into the
    /// next unequal step, so a step of one request goes where the
    /// round-robin turn would send it when the shares are near even.
    fn deal_evenly(&mut self, total: u64, start: usize, out: &mut [u64]) {
        even_deal(total, start, out);
        let even = total as f64 / out.len() as f64;
        for (c, &o) in self.credit.iter_mut().zip(out.iter()) {
            *c += even - o as f64;
        }
    }

    /// `share[i] = E[min(L, s_i)]` under the chain's stationary law (or
    /// `s_i` at or over capacity).
    fn weights(&mut self, offered: f64, slots: &[f64]) {
        let n = slots.len();
        let capacity: f64 = slots.iter().sum();
        if offered >= capacity || offered <= 0.0 {
            // Saturated: every instance completes at its slots (with no
            // load at all, the count is zero or a stray few: the same).
            self.share.copy_from_slice(slots);
            return;
        }
        self.order.clear();
        self.order.extend(0..n as u32);
        self.order
            .sort_by(|&a, &b| slots[a as usize].total_cmp(&slots[b as usize]));
        let nf = n as f64;
        // Running sums over N of pi and pi x level, and at each instance's
        // crossing (level >= its slots) the sums of the N below it, kept in
        // `share` (pi x level) and `frac` (pi) until the total is known.
        let (mut p, mut sum_p, mut sum_pl, mut peak) = (1.0f64, 0.0f64, 0.0f64, 1.0f64);
        // Slots of the instances already crossed (their whole slots count
        // in the death rate) and how many are crossed.
        let (mut crossed_slots, mut j) = (0.0, 0usize);
        let mut tail = 0.0;
        let mut big_n = 0u64;
        loop {
            let level = big_n as f64 / nf;
            while j < n && level >= slots[self.order[j] as usize] {
                let i = self.order[j] as usize;
                self.share[i] = sum_pl;
                self.frac[i] = sum_p;
                crossed_slots += slots[i];
                j += 1;
            }
            if big_n > 0 {
                // Down at the completions of the level's busy slots
                // (> 0: an instance not crossed has slots above the level).
                let death = crossed_slots + level * (n - j) as f64;
                p *= offered / death;
                peak = peak.max(p);
                if p > 1e150 {
                    let k = 1e-150;
                    (p, peak, sum_p, sum_pl) = (p * k, peak * k, sum_p * k, sum_pl * k);
                    for &i in &self.order[..j] {
                        self.share[i as usize] *= k;
                        self.frac[i as usize] *= k;
                    }
                }
            }
            if j == n {
                // Every instance saturated from here: a geometric tail.
                tail = p / (1.0 - offered / capacity);
                break;
            }
            sum_p += p;
            sum_pl += p * level;
            if p < peak * 1e-18 {
                // Past the mode (the chain is unimodal: its death rate
                // grows with N) and negligible: the rest adds nothing.
                for &i in &self.order[j..] {
                    self.share[i as usize] = sum_pl;
                    self.frac[i as usize] = sum_p;
                }
                break;
            }
            big_n += 1;
        }
        let total_p = sum_p + tail;
        for &i in &self.order {
            let i = i as usize;
            let below_l = self.share[i];
            let below_p = self.frac[i];
            self.share[i] = (below_l + slots[i] * (total_p - below_p)) / total_p;
        }
    }

    /// Water-fills `total` over the weights in `share` and the backlogs:
    /// `share[i]` becomes `max(0, theta x w_i - backlog_i)`, summing to
    /// `total`. False when no instance has weight.
    fn water_fill(&mut self, total: f64, backlog: &[f64]) -> bool {
        let n = backlog.len();
        let w_sum: f64 = self.share.iter().sum();
        if w_sum <= 0.0 || !w_sum.is_finite() {
            return false;
        }
        if backlog.iter().all(|&q| q == 0.0) {
            let theta = total / w_sum;
            self.share.iter_mut().for_each(|w| *w *= theta);
            return true;
        }
        // The level theta at which instance i starts to receive is
        // backlog_i / w_i; instances join in that order.
        self.order.clear();
        self.order
            .extend((0..n as u32).filter(|&i| self.share[i as usize] > 0.0));
        let share = &self.share;
        let key = |i: u32| backlog[i as usize] / share[i as usize];
        self.order.sort_by(|&a, &b| key(a).total_cmp(&key(b)));
        let (mut w_in, mut q_in, mut theta) = (0.0, 0.0, 0.0);
        for (k, &i) in self.order.iter().enumerate() {
            w_in += self.share[i as usize];
            q_in += backlog[i as usize];
            theta = (total + q_in) / w_in;
            let next = self.order.get(k + 1).map(|&m| key(m));
            if next.is_none_or(|t| theta <= t) {
                break;
            }
        }
        for (i, w) in self.share.iter_mut().enumerate() {
            *w = (theta * *w - backlog[i]).max(0.0);
        }
        true
    }

    /// Whole counts from the real ones in `share` (this step's plus the
    /// credit): the floors, then one more to the largest remainders, ties
    /// from `start` on.
    fn deal(&mut self, total: u64, start: usize, out: &mut [u64]) {
        let n = out.len();
        let mut dealt = 0u64;
        for ((o, &a), frac) in out.iter_mut().zip(&self.share).zip(&mut self.frac) {
            let a = a.max(0.0);
            let f = a.floor();
            *o = f as u64;
            *frac = a - f;
            dealt += *o;
        }
        // Rounding may leave the floors a request over: take it back from
        // the smallest remainders (last from the pointer first).
        while dealt > total {
            let i = (0..n)
                .map(|k| (start + n - 1 - k) % n)
                .filter(|&i| out[i] > 0)
                .min_by(|&a, &b| self.frac[a].total_cmp(&self.frac[b]))
                .expect("a count to take back");
            out[i] -= 1;
            self.frac[i] = 1.0;
            dealt -= 1;
        }
        self.order.clear();
        self.order.extend((0..n).map(|k| ((start + k) % n) as u32));
        let frac = &self.frac;
        // Stable: equal remainders keep their order from the pointer.
        self.order
            .sort_by(|&a, &b| frac[b as usize].total_cmp(&frac[a as usize]));
        let mut k = 0;
        while dealt < total {
            out[self.order[k % n] as usize] += 1;
            dealt += 1;
            k += 1;
        }
    }
}

/// The round-robin deal: `total / n` each, one more to the `total % n`
/// instances from `start` on.
pub fn even_deal(total: u64, start: usize, out: &mut [u64]) {
    let n = out.len();
    let (each, extra) = (total / n as u64, (total % n as u64) as usize);
    for (i, o) in out.iter_mut().enumerate() {
        *o = each + u64::from((i + n - start) % n < extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::{Stream, open01, stream};

    fn split(total: u64, offered: f64, slots: &[f64], backlog: &[f64], start: usize) -> Vec<u64> {
        let mut lo = LeastOutstanding::new(slots.len());
        let mut out = vec![0; slots.len()];
        lo.split(total, offered, slots, backlog, start, &mut out);
        out
    }

    #[test]
    fn equal_instances_get_the_round_robin_deal_exactly() {
        for n in [1usize, 2, 3, 20, 1250] {
            for total in [0u64, 1, 7, 999, 50_001] {
                for start in [0, n / 2, n - 1] {
                    let mut even = vec![0; n];
                    even_deal(total, start, &mut even);
                    for (s, q) in [(3.0, 0.0), (8.0, 0.0), (2.5, 12.0)] {
                        let got = split(total, 0.7 * s * n as f64, &vec![s; n], &vec![q; n], start);
                        assert_eq!(got, even, "n {n}, total {total}, start {start}, slots {s}");
                    }
                }
            }
        }
        let mut out = [0; 3];
        even_deal(8, 2, &mut out);
        assert_eq!(out, [3, 2, 3], "the remainder from the pointer on");
    }

    #[test]
    fn an_instance_with_fewer_serving_slots_gets_fewer_requests_under_load() {
        let slots = [3.0, 2.0];
        // Offered load as a fraction of the serving capacity (5 slots).
        let share = |rho: f64| split(100_000, rho * 5.0, &slots, &[0.0; 2], 0)[1] as f64 / 1e5;
        let (low, mid, high) = (share(0.2), share(0.6), share(0.9));
        assert!(low > 0.49 && low < 0.5, "{low}");
        assert!(high < mid && mid < low, "{low} {mid} {high}");
        assert!(high < 0.43, "{high}");
        // At or over capacity every instance is saturated: shares follow slots.
        assert_eq!(split(1000, 7.0, &slots, &[0.0; 2], 1), vec![600, 400]);
        // No serving slot, no request (while another instance serves).
        assert_eq!(split(10, 2.0, &[0.0, 3.0], &[0.0; 2], 0), vec![0, 10]);
        // Nobody serving at all: the round-robin deal.
        assert_eq!(split(5, 2.0, &[0.0, 0.0], &[4.0, 0.0], 1), vec![2, 3]);
    }

    #[test]
    fn a_backlog_is_outstanding_work_the_split_fills_around() {
        let got = split(100, 3.0, &[3.0, 3.0], &[40.0, 0.0], 0);
        assert_eq!(got, vec![30, 70], "level: 40 + 30 = 0 + 70");
        let got = split(100, 3.0, &[3.0, 3.0], &[500.0, 0.0], 0);
        assert_eq!(got, vec![0, 100]);
    }

    #[test]
    fn counts_sum_to_the_total_and_repeat_exactly() {
        let mut rng = stream(11, Stream::Routing);
        let (mut lo, mut twin) = (LeastOutstanding::new(40), LeastOutstanding::new(40));
        for case in 0..2000 {
            let n = 1 + (open01(&mut rng) * 40.0) as usize;
            let slots: Vec<f64> = (0..n)
                .map(|_| (open01(&mut rng) * 9.0).floor() * if case % 3 == 0 { 0.5 } else { 1.0 })
                .collect();
            let backlog: Vec<f64> = (0..n)
                .map(|_| {
                    if open01(&mut rng) < 0.2 {
                        open01(&mut rng) * 50.0
                    } else {
                        0.0
                    }
                })
                .collect();
            let capacity: f64 = slots.iter().sum();
            let offered = open01(&mut rng) * 1.2 * capacity.max(1.0);
            let total = (open01(&mut rng) * 5000.0) as u64;
            let start = (open01(&mut rng) * n as f64) as usize % n;
            let mut out = vec![0; n];
            lo.split(total, offered, &slots, &backlog, start, &mut out);
            assert_eq!(out.iter().sum::<u64>(), total, "case {case}: {slots:?}");
            // The same history gives the same counts.
            let mut again = vec![0; n];
            twin.split(total, offered, &slots, &backlog, start, &mut again);
            assert_eq!(out, again, "case {case}");
        }
    }

    /// One request a step (the default fleet's rate): the larger
    /// remainder alone would send every one to the instance with more
    /// slots (its share is 0.53 at 60% load); the credits make each
    /// instance's count follow its share.
    #[test]
    fn small_steps_follow_the_shares_not_the_larger_remainder() {
        let mut lo = LeastOutstanding::new(2);
        let (slots, mut got, mut start) = ([3.0, 2.0], [0u64; 2], 0);
        let mut out = [0; 2];
        for _ in 0..10_000 {
            lo.split(1, 3.0, &slots, &[0.0; 2], start, &mut out);
            got[0] += out[0];
            got[1] += out[1];
            start = (start + 1) % 2;
        }
        let mut share = [0; 2];
        LeastOutstanding::new(2).split(1_000_000, 3.0, &slots, &[0.0; 2], 0, &mut share);
        let expected = share[1] as f64 / 1e6 * 1e4;
        assert!(
            (got[1] as f64 - expected).abs() <= 2.0,
            "{got:?} vs {expected}"
        );
        assert!(got[1] > 4500 && got[1] < 4800, "{got:?}");
    }

    /// Join-the-shortest-queue simulated request by request: instances of
    /// `slots` exponential servers (rate 1), Poisson arrivals at `offered`,
    /// each to the instance with the fewest outstanding, ties from the one
    /// after the last pick. Returns each instance's share of the arrivals.
    fn jsq(offered: f64, slots: &[u32], arrivals: u32) -> Vec<f64> {
        let n = slots.len();
        let mut rng = stream(5, Stream::Routing);
        let (mut out, mut got, mut next, mut k) = (vec![0u32; n], vec![0u32; n], 0, 0);
        while k < arrivals {
            let busy: Vec<f64> = (0..n).map(|i| out[i].min(slots[i]) as f64).collect();
            let mut u = open01(&mut rng) * (offered + busy.iter().sum::<f64>());
            if u < offered {
                let b = (0..n)
                    .map(|j| (next + j) % n)
                    .min_by_key(|&i| out[i])
                    .unwrap();
                out[b] += 1;
                got[b] += 1;
                next = (b + 1) % n;
                k += 1;
                continue;
            }
            u -= offered;
            let i = (0..n).position(|i| {
                u -= busy[i];
                u < 0.0
            });
            out[i.unwrap_or(n - 1)] -= 1;
        }
        got.iter().map(|&g| g as f64 / arrivals as f64).collect()
    }

    #[test]
    fn the_split_matches_a_simulated_least_outstanding_balancer() {
        for (slots, rho) in [
            (&[3u32, 2][..], 0.6),
            (&[3, 2], 0.9),
            (&[2, 1], 0.8),
            (&[3, 3, 2], 0.8),
        ] {
            let s: Vec<f64> = slots.iter().map(|&x| x as f64).collect();
            let offered = rho * s.iter().sum::<f64>();
            let exact = jsq(offered, slots, 200_000);
            let model = split(1_000_000, offered, &s, &vec![0.0; s.len()], 0);
            let n = s.len() as f64;
            for i in 0..s.len() {
                let m = model[i] as f64 / 1e6;
                // Within 0.015 of the simulation, where the even split is
                // 0.025 to 0.12 off it.
                assert!(
                    (m - exact[i]).abs() < 0.015,
                    "{slots:?} at {rho}: {model:?} vs {exact:?}"
                );
                assert!(
                    (1.0 / n - exact[i]).abs() > 0.02,
                    "{slots:?} at {rho}: {exact:?}"
                );
            }
        }
    }
}
