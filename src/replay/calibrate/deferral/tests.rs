use super::*;

#[test]
fn the_ridge_is_fitted_at_its_quartiles_beside_the_median() {
    assert!(ridge_members(1, 0).is_empty());
    assert!(ridge_members(2, 0).is_empty());
    assert_eq!(ridge_members(3, 1), vec![0, 2]);
    assert_eq!(ridge_members(4, 1), vec![0, 3]);
    assert_eq!(ridge_members(7, 3), vec![1, 5]);
    // h3 of docs/calibration.md: 18 plausible, the median the ninth.
    assert_eq!(ridge_members(18, 8), vec![4, 13]);
    for len in 3..40 {
        let median = (len - 1) / 2;
        let m = ridge_members(len, median);
        assert_eq!(m.len(), 2, "{len}");
        assert!(m[0] < median && median < m[1] && m[1] < len, "{len}: {m:?}");
    }
}

#[test]
fn cramer_von_mises_on_hand_made_samples() {
    let a = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(cramer_von_mises(&a, &a), Some(0.0));
    // Disjoint: F_a climbs to 1 over a's values while F_b is 0, then F_b
    // climbs: (1/4)^2 + (2/4)^2 + (3/4)^2 + 1 + (3/4)^2 + (2/4)^2 +
    // (1/4)^2 + 0 over 8 values.
    let b = [5.0, 6.0, 7.0, 8.0];
    let want = (2.0 * (1.0 + 4.0 + 9.0) / 16.0 + 1.0) / 8.0;
    assert!((cramer_von_mises(&a, &b).unwrap() - want).abs() < 1e-12);
    assert_eq!(cramer_von_mises(&a, &[]), None);
}

fn point(d: Deferral, distance: f64, boot_mb: f64) -> Point {
    Point {
        floor_distance: f64::INFINITY,
        deferral: d,
        base_memory: false,
        distance,
        boot_mb,
        pooled: 900,
        late: 0.5,
        targets: [1.0, 2.0, 3.0, 4.0],
        shape: None,
    }
}

fn read(busy_rps: f64, defer_max_s: f64) -> Deferral {
    Deferral::Read {
        busy_rps,
        defer_max_s,
    }
}

#[test]
fn off_is_kept_where_it_fits_within_the_noise() {
    // 100 rows against 900: T = 90 x distance; off at T 0.27 is within
    // 0.461 of the best's 0.09.
    let points = vec![
        point(Deferral::Off, 0.003, 300.0),
        point(read(1.0, 90.0), 0.001, 360.0),
    ];
    let s = choose(points, 100, &[300.0, 360.0], &[vec![1.0], vec![3.0]]);
    assert_eq!(s.chosen, Deferral::Off);
    assert_eq!(s.targets, None);
}

#[test]
fn off_under_the_bases_memory_keeps_off_where_plain_off_does_not_fit() {
    // Steps make recycles late without a deferral: plain off far out
    // (T 9), a deferral at T 0.09, off under the base's memory at T 0.18.
    let mut stepped = point(Deferral::Off, 0.002, 380.0);
    stepped.base_memory = true;
    let points = vec![
        point(Deferral::Off, 0.1, 250.0),
        point(read(1.0, 90.0), 0.001, 300.0),
        stepped,
    ];
    let s = choose(
        points.clone(),
        100,
        &[200.0, 300.0, 380.0, 400.0],
        &vec![vec![1.0]; 4],
    );
    assert_eq!(s.chosen, Deferral::Off);
    assert!(s.chosen_base_memory);
    let report = s.report();
    let chosen: Vec<_> = report.iter().filter(|p| p.chosen).collect();
    assert_eq!(chosen.len(), 1);
    assert_eq!((chosen[0].deferral, chosen[0].memory), ("off", "base"));
    assert!(!report[0].plausible && report[2].plausible);
    // Without it, the deferral.
    let s = choose(
        points[..2].to_vec(),
        100,
        &[200.0, 300.0, 380.0, 400.0],
        &vec![vec![1.0]; 4],
    );
    assert_eq!(s.chosen, read(1.0, 90.0));
}

#[test]
fn off_that_fits_as_well_at_the_floor_is_not_kept() {
    // 100 rows against 900: T = 90 x distance. Off's best (T 0.27, at
    // 200 MB) is within the noise of the best deferral's (T 0.09, at
    // 300 MB); at the floor (136 MB) off is at T 0.36, still within the
    // noise of its own best: it fits only by a boot the search cannot
    // go under, and the deferral is chosen.
    let boots = [136.0, 200.0, 300.0, 400.0, 500.0];
    let recorded = vec![vec![1.0]; boots.len()];
    let scan = |floor_distance: f64| {
        let mut off = point(Deferral::Off, 0.003, 200.0);
        off.floor_distance = floor_distance;
        choose(
            vec![off, point(read(1.0, 90.0), 0.001, 300.0)],
            100,
            &boots,
            &recorded,
        )
    };
    assert_eq!(scan(0.004).chosen, read(1.0, 90.0));
    // Off measurably worse at the floor (T 1.8): kept.
    assert_eq!(scan(0.02).chosen, Deferral::Off);
    // Off the best fit of all, flat to the floor: kept.
    let s = choose(
        vec![
            off_point(0.0005, 200.0, 0.0006),
            point(read(1.0, 90.0), 0.001, 300.0),
        ],
        100,
        &boots,
        &recorded,
    );
    assert_eq!(s.chosen, Deferral::Off);
}

#[test]
fn a_deferral_is_the_plausible_one_at_the_median_boot() {
    // Off far out (T 9); three deferrals fit alike at boots 280, 400
    // and 450, a fourth does not, two more only at the floor of the
    // boots tried: the one at 400 is chosen, with its windows' targets,
    // and the recording's late share read at its boot.
    let points = vec![
        point(Deferral::Off, 0.1, 200.0),
        point(read(1.0, 45.0), 0.001, 280.0),
        point(read(1.0, 90.0), 0.002, 400.0),
        point(read(0.9, 135.0), 0.0015, 450.0),
        point(read(0.8, 270.0), 0.05, 500.0),
        // As close as the best, but at the floor of the boots tried.
        point(read(1.1, 45.0), 0.001, 136.0),
        point(read(1.1, 90.0), 0.001, 136.0),
    ];
    let boots = [136.0, 200.0, 280.0, 400.0, 450.0, 500.0, 520.0];
    let recorded = vec![
        vec![0.1],
        vec![0.5],
        vec![1.0],
        vec![3.0, 5.0],
        vec![4.0],
        vec![6.0],
        vec![7.0],
    ];
    let s = choose(points, 100, &boots, &recorded);
    assert_eq!(s.chosen, read(1.0, 90.0));
    assert_eq!(s.targets, Some([1.0, 2.0, 3.0, 4.0]));
    assert_eq!(s.late, 1.0);
    assert_eq!(s.plausible.len(), 3);
    assert!(
        s.note()
            .contains("3 deferrals fit within the recording's noise")
    );
}

/// Off at its best `distance` and `boot`, `floor` at the lowest boot.
fn off_point(distance: f64, boot: f64, floor: f64) -> Point {
    let mut off = point(Deferral::Off, distance, boot);
    off.floor_distance = floor;
    off
}

#[test]
fn off_says_which_deferrals_fit_as_well_and_that_boot_rests_on_off() {
    // Off fits best (and off the floor); two deferrals fit within the
    // noise at higher boots, one does not: off is kept, and its note
    // names the two and their boots, and how to give a deferral.
    let points = vec![
        off_point(0.001, 300.0, 0.05),
        point(read(1.0, 90.0), 0.0012, 340.0),
        point(read(0.9, 135.0), 0.0015, 420.0),
        point(read(0.8, 270.0), 0.05, 480.0),
    ];
    let boots = [136.0, 300.0, 340.0, 420.0, 480.0, 520.0];
    let recorded = vec![vec![0.5]; boots.len()];
    let s = choose(points, 100, &boots, &recorded);
    assert_eq!(s.chosen, Deferral::Off);
    let note = s.note();
    assert!(
        note.contains("2 deferrals fit as well, at boots from 340 to 420 MB"),
        "{note}"
    );
    assert!(note.contains("give its busy_rps and defer_max_s in --scenario"));
    // Alone within the noise, off says nothing more.
    let s = choose(
        vec![
            off_point(0.001, 300.0, 0.05),
            point(read(0.8, 270.0), 0.05, 480.0),
        ],
        100,
        &boots,
        &recorded,
    );
    assert_eq!(s.chosen, Deferral::Off);
    assert!(!s.note().contains("fit as well"), "{}", s.note());
}
