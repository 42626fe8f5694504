//! `engram bench plot`: throughput against threads (or against skew) from JSON results.
//!
//! Reads the JSON that `engram bench ycsb` and `engram bench tpcc` write (one report, a list
//! of reports, or a comparison with a `results` list) and draws one line per database or
//! configuration. Each line is labelled at its right end, so the plot reads without a legend.
//! The label of a line names only what differs between the lines (the database, the YCSB mode
//! or workload, the TPC-C mix, ...).
//!
//! Drawing uses `plotters` without system libraries: the bitmap and SVG backends, and an
//! ASCII subset of DejaVu Sans embedded in the binary (see `assets/`).

use plotters::prelude::*;
use plotters::style::FontStyle;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Once;

/// DejaVu Sans, printable ASCII only (10 KB); its licence is `assets/DejaVuSans-ascii.LICENSE`.
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans-ascii.ttf");

/// What the horizontal axis shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    Threads,
    /// YCSB's Zipfian constant.
    Theta,
}

impl Axis {
    pub fn parse(name: &str) -> Result<Option<Axis>, String> {
        match name {
            "auto" => Ok(None),
            "threads" => Ok(Some(Axis::Threads)),
            "theta" => Ok(Some(Axis::Theta)),
            other => Err(format!("unknown axis {other:?}: use auto, threads or theta")),
        }
    }

    fn title(self) -> &'static str {
        match self {
            Axis::Threads => "worker threads",
            Axis::Theta => "Zipfian theta (skew)",
        }
    }

    /// The frame of a throughput plot against this axis.
    pub fn frame(self) -> Frame {
        Frame {
            x_title: self.title().into(),
            y_title: "transactions per second".into(),
            whole_x: self == Axis::Threads,
        }
    }
}

/// What a line plot's axes say.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub x_title: String,
    pub y_title: String,
    /// The horizontal axis counts things (threads): one tick per whole number, labelled only
    /// where a point lies.
    pub whole_x: bool,
}

/// One measured configuration, read from a result file.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub benchmark: String,
    /// What tells configurations apart, in the order labels name them: database, then the
    /// workload's settings.
    pub attributes: Vec<String>,
    pub threads: f64,
    pub theta: Option<f64>,
    pub throughput: f64,
}

/// A line of the plot: the points of one configuration, ordered along the axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    /// (x, throughput); repeated measurements of one x are reduced to their median.
    pub points: Vec<(f64, f64)>,
}

/// Reads the reports in one result file's JSON.
pub fn points(json: &Value) -> Result<Vec<Point>, String> {
    match json {
        Value::Array(reports) => {
            reports.iter().map(point).collect::<Result<Vec<_>, _>>().map(|p| p.concat())
        }
        Value::Object(fields) => match fields.get("results") {
            Some(results) => points(results),
            None => point(json),
        },
        _ => Err("expected a report, a list of reports or {\"results\": [...]}".into()),
    }
}

fn point(report: &Value) -> Result<Vec<Point>, String> {
    let text = |name: &str| report.get(name).and_then(Value::as_str).map(str::to_string);
    let number = |name: &str| report.get(name).and_then(Value::as_f64);
    let benchmark = text("benchmark").ok_or("a report without \"benchmark\"")?;
    let (Some(throughput), Some(threads)) = (number("throughput_txn_per_s"), number("threads"))
    else {
        return Err(format!(
            "a {benchmark} report needs \"throughput_txn_per_s\" and \"threads\" to be plotted"
        ));
    };
    let db = text("db").unwrap_or_else(|| "?".into());
    let mut attributes = vec![db];
    let mut theta = None;
    match benchmark.as_str() {
        "ycsb" => {
            attributes.push(text("mode").unwrap_or_default());
            attributes.push(text("workload").unwrap_or_default());
            attributes.push(number("rows").map_or(String::new(), rows));
            theta = number("theta");
        }
        "tpcc" => {
            attributes.push(text("mix").map(|mix| format!("{mix} mix")).unwrap_or_default());
            let scans = report.get("stock_scan").is_some_and(|scan| !scan.is_null());
            attributes.push(if scans { "with StockScan".into() } else { String::new() });
        }
        other => return Err(format!("cannot plot {other:?} results: use ycsb or tpcc")),
    }
    Ok(vec![Point { benchmark, attributes, threads, theta, throughput }])
}

fn rows(count: f64) -> String {
    match count {
        c if c >= 1e6 => format!("{}M rows", c / 1e6),
        c if c >= 1e3 => format!("{}K rows", c / 1e3),
        c => format!("{c} rows"),
    }
}

/// A title naming the benchmark and what every run shares (the workload or mix, the rows).
pub fn title(points: &[Point]) -> String {
    let Some(first) = points.first() else { return String::new() };
    let name = match first.benchmark.as_str() {
        "tpcc" => "TPC-C",
        "ycsb" => "YCSB",
        other => other,
    };
    let shared: Vec<&str> = (1..first.attributes.len())
        .filter(|&i| points.iter().all(|p| p.attributes.get(i) == first.attributes.get(i)))
        .map(|i| first.attributes[i].as_str())
        .filter(|value| !value.is_empty())
        .collect();
    if points.iter().any(|p| p.benchmark != first.benchmark) || shared.is_empty() {
        format!("{name} throughput")
    } else {
        format!("{name} throughput: {}", shared.join(", "))
    }
}

/// Picks the axis: skew when the points vary in theta at one thread count, else threads.
pub fn choose_axis(points: &[Point]) -> Axis {
    let distinct = |values: Vec<f64>| {
        let mut values: Vec<u64> = values.into_iter().map(f64::to_bits).collect();
        values.sort_unstable();
        values.dedup();
        values.len()
    };
    let thetas = distinct(points.iter().filter_map(|p| p.theta).collect());
    let threads = distinct(points.iter().map(|p| p.threads).collect());
    if thetas > 1 && threads == 1 { Axis::Theta } else { Axis::Threads }
}

/// Groups points into lines. A line's label names the attributes that differ between lines,
/// plus the thread count or skew that is not on the axis when it varies.
pub fn series(points: &[Point], axis: Axis) -> Result<Vec<Series>, String> {
    if points.is_empty() {
        return Err("no results to plot".into());
    }
    let x_of = |point: &Point| match axis {
        Axis::Threads => Ok(point.threads),
        Axis::Theta => point
            .theta
            .ok_or_else(|| format!("a {} result has no theta to plot against", point.benchmark)),
    };
    let other_axis = |point: &Point| match axis {
        Axis::Threads => point.theta.map(|theta| format!("theta {theta}")).unwrap_or_default(),
        Axis::Theta => format!("{} threads", point.threads),
    };
    // Every attribute of a point, the benchmark first, then the other axis.
    let described = |point: &Point| {
        let mut parts = vec![point.benchmark.clone()];
        parts.extend(point.attributes.iter().cloned());
        parts.push(other_axis(point));
        parts
    };
    let all: Vec<Vec<String>> = points.iter().map(described).collect();
    let width = all.iter().map(Vec::len).max().unwrap_or(0);
    let varies: Vec<bool> = (0..width)
        .map(|i| {
            let first = all[0].get(i);
            all.iter().any(|parts| parts.get(i) != first)
        })
        .collect();
    let mut lines: BTreeMap<String, BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
    let mut order = Vec::new();
    for (point, parts) in points.iter().zip(&all) {
        let named: Vec<&str> = parts
            .iter()
            .zip(&varies)
            .filter(|(part, varies)| **varies && !part.is_empty())
            .map(|(part, _)| part.as_str())
            .collect();
        let label = if named.is_empty() { parts[1].clone() } else { named.join(", ") };
        if !lines.contains_key(&label) {
            order.push(label.clone());
        }
        let x = x_of(point)?;
        lines.entry(label).or_default().entry(x.to_bits()).or_default().push(point.throughput);
    }
    Ok(order
        .into_iter()
        .map(|label| {
            let mut points: Vec<(f64, f64)> = lines[&label]
                .iter()
                .map(|(x, values)| (f64::from_bits(*x), median(values)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { label, points }
        })
        .collect())
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 { sorted[middle] } else { (sorted[middle - 1] + sorted[middle]) / 2.0 }
}

/// Formats a throughput for the vertical axis: 950, 12K, 1.5M.
pub fn short_rate(rate: f64) -> String {
    let trim = |value: f64, suffix: &str| {
        let text = format!("{value:.1}");
        format!("{}{suffix}", text.strip_suffix(".0").unwrap_or(&text))
    };
    match rate.abs() {
        r if r >= 1e6 => trim(rate / 1e6, "M"),
        r if r >= 1e3 => trim(rate / 1e3, "K"),
        _ => format!("{rate:.0}"),
    }
}

/// Spreads label positions (pixel rows) apart by at least `gap`, keeping their order.
fn spread(mut rows: Vec<(usize, i32)>, gap: i32) -> Vec<(usize, i32)> {
    rows.sort_by_key(|&(_, y)| y);
    for i in 1..rows.len() {
        if rows[i].1 - rows[i - 1].1 < gap {
            rows[i].1 = rows[i - 1].1 + gap;
        }
    }
    rows
}

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Draws `lines` into `out` (`.png` or `.svg`), titled `title`.
pub fn draw(lines: &[Series], frame: &Frame, title: &str, out: &Path) -> Result<(), String> {
    on_canvas(out, |root| render(root, lines, frame, title))
}

/// Draws grouped bars into `out`: one group per category, one bar per series in it, each
/// series `(label, one value per category)`.
pub fn draw_bars(
    categories: &[String],
    bars: &[(String, Vec<f64>)],
    y_title: &str,
    title: &str,
    out: &Path,
) -> Result<(), String> {
    on_canvas(out, |root| render_bars(root, categories, bars, y_title, title))
}

/// Calls `render` with a drawing area over `out`, chosen by its extension.
fn on_canvas(
    out: &Path,
    render: impl FnOnce(AnyArea<'_>) -> Result<(), String>,
) -> Result<(), String> {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The embedded font is valid; a failure would show as missing text, not a crash.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
    let size = (960, 600);
    match out.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("png") => render(AnyArea::Bitmap(BitMapBackend::new(out, size).into_drawing_area())),
        Some("svg") => render(AnyArea::Svg(SVGBackend::new(out, size).into_drawing_area())),
        _ => Err(format!("{}: the output must end in .png or .svg", out.display())),
    }
}

/// A drawing area on either backend.
enum AnyArea<'a> {
    Bitmap(DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>),
    Svg(DrawingArea<SVGBackend<'a>, plotters::coord::Shift>),
}

fn render(area: AnyArea<'_>, lines: &[Series], frame: &Frame, title: &str) -> Result<(), String> {
    match area {
        AnyArea::Bitmap(root) => render_lines(root, lines, frame, title),
        AnyArea::Svg(root) => render_lines(root, lines, frame, title),
    }
}

fn render_bars(
    area: AnyArea<'_>,
    categories: &[String],
    bars: &[(String, Vec<f64>)],
    y_title: &str,
    title: &str,
) -> Result<(), String> {
    match area {
        AnyArea::Bitmap(root) => render_bar_groups(root, categories, bars, y_title, title),
        AnyArea::Svg(root) => render_bar_groups(root, categories, bars, y_title, title),
    }
}

fn failed(error: &dyn std::fmt::Display) -> String {
    format!("drawing failed: {error}")
}

/// Formats a vertical-axis value: rates as 12K or 1.5M, small values with one decimal.
fn y_label(y: f64, y_max: f64) -> String {
    if y_max < 100.0 { format!("{y:.1}") } else { short_rate(y) }
}

fn render_bar_groups<B: DrawingBackend>(
    root: DrawingArea<B, plotters::coord::Shift>,
    categories: &[String],
    bars: &[(String, Vec<f64>)],
    y_title: &str,
    title: &str,
) -> Result<(), String>
where
    B::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| failed(&e))?;
    let y_max = bars.iter().flat_map(|(_, values)| values.iter().copied()).fold(0.0, f64::max);
    let y_top = (y_max * 1.12).max(1e-9);
    let groups = categories.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .margin_right(160)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(0.0..groups, 0.0..y_top)
        .map_err(|e| failed(&e))?;
    let name = |x: &f64| {
        let index = x.floor() as usize;
        let centred = (x - index as f64 - 0.5).abs() < 1e-6;
        categories.get(index).filter(|_| centred).cloned().unwrap_or_default()
    };
    chart
        .configure_mesh()
        .y_desc(y_title)
        .x_labels(categories.len() * 2 + 1)
        .x_label_formatter(&name)
        .y_label_formatter(&|y: &f64| y_label(*y, y_max))
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .light_line_style(WHITE.mix(0.0))
        .disable_x_mesh()
        .draw()
        .map_err(|e| failed(&e))?;
    let width = 0.8 / bars.len().max(1) as f64;
    for (index, (label, values)) in bars.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        let rectangles = values.iter().enumerate().map(|(group, &value)| {
            let left = group as f64 + 0.1 + width * index as f64;
            Rectangle::new([(left, 0.0), (left + width * 0.9, value)], colour.filled())
        });
        chart
            .draw_series(rectangles)
            .map_err(|e| failed(&e))?
            .label(label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(|e| failed(&e))?;
    root.present().map_err(|e| failed(&e))
}

fn render_lines<B: DrawingBackend>(
    root: DrawingArea<B, plotters::coord::Shift>,
    lines: &[Series],
    frame: &Frame,
    title: &str,
) -> Result<(), String>
where
    B::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| failed(&e))?;
    let xs = lines.iter().flat_map(|line| line.points.iter().map(|p| p.0));
    let (x_min, x_max) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let y_max = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    let (x_min, x_max) = if frame.whole_x {
        (x_min.min(1.0) - 0.25, x_max + 0.25)
    } else {
        let pad = ((x_max - x_min) * 0.05).max(0.05);
        (x_min - pad, x_max + pad)
    };
    let label_width = lines.iter().map(|l| l.label.len()).max().unwrap_or(0) as u32 * 7 + 24;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .margin_right(label_width.clamp(40, 420))
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x_min..x_max, 0.0..(y_max * 1.12).max(1e-9))
        .map_err(|e| failed(&e))?;
    let threads: Vec<f64> = {
        let mut all: Vec<f64> = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).collect();
        all.sort_by(f64::total_cmp);
        all.dedup();
        all
    };
    let x_format = |x: &f64| {
        if !frame.whole_x {
            format!("{x:.2}")
        } else if threads.iter().any(|t| (t - x).abs() < 1e-9) {
            format!("{x:.0}")
        } else {
            String::new()
        }
    };
    let y_format = |y: &f64| y_label(*y, y_max);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(frame.x_title.as_str())
        .y_desc(frame.y_title.as_str())
        .x_label_formatter(&x_format)
        .y_label_formatter(&y_format)
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .light_line_style(WHITE.mix(0.0));
    if frame.whole_x {
        // One tick per whole count in range.
        mesh.x_labels(((x_max - x_min).ceil() as usize + 1).min(40));
    }
    mesh.draw().map_err(|e| failed(&e))?;
    let mut ends = Vec::with_capacity(lines.len());
    for (index, line) in lines.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(line.points.iter().copied(), colour.stroke_width(2)))
            .map_err(|e| failed(&e))?;
        chart
            .draw_series(line.points.iter().map(|&p| Circle::new(p, 4, colour.filled())))
            .map_err(|e| failed(&e))?;
        if let Some(&last) = line.points.last() {
            ends.push((index, chart.backend_coord(&last)));
        }
    }
    // Labels sit right of each line's last point, pushed apart where lines end close together.
    let rows = spread(ends.iter().map(|&(index, (_, y))| (index, y)).collect(), 18);
    for (index, y) in rows {
        let x = ends.iter().find(|e| e.0 == index).map_or(0, |e| e.1.0);
        let colour = COLOURS[index % COLOURS.len()];
        let style = ("sans-serif", 16).into_font().color(&colour);
        root.draw(&Text::new(lines[index].label.clone(), (x + 10, y - 8), style))
            .map_err(|e| failed(&e))?;
    }
    root.present().map_err(|e| failed(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tpcc(db: &str, threads: u32, rate: f64) -> Value {
        json!({"benchmark": "tpcc", "db": db, "mix": "standard", "threads": threads,
               "throughput_txn_per_s": rate, "stock_scan": null})
    }

    #[test]
    fn lines_are_named_by_what_differs() {
        let files = [
            json!([tpcc("engram", 1, 90e3), tpcc("engram", 2, 170e3)]),
            tpcc("sqlite", 1, 9e3),
            tpcc("sqlite", 2, 8e3),
        ];
        let points: Vec<Point> = files.iter().flat_map(|f| points(f).unwrap()).collect();
        assert_eq!(choose_axis(&points), Axis::Threads);
        let lines = series(&points, Axis::Threads).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].label, "engram");
        assert_eq!(lines[0].points, vec![(1.0, 90e3), (2.0, 170e3)]);
        assert_eq!(lines[1].label, "sqlite");
    }

    #[test]
    fn skew_runs_plot_against_theta_and_repeats_take_the_median() {
        let ycsb = |mode: &str, theta: f64, rate: f64| {
            json!({"benchmark": "ycsb", "db": "engram", "mode": mode, "workload": "silo",
                   "rows": 10_000_000, "theta": theta, "threads": 2,
                   "throughput_txn_per_s": rate})
        };
        let comparison = json!({"results": [
            ycsb("raw", 0.0, 10.0), ycsb("txn", 0.0, 9.0), ycsb("txn", 0.9, 5.0),
            ycsb("txn", 0.9, 7.0), ycsb("txn", 0.9, 100.0), ycsb("raw", 0.9, 8.0)
        ], "ratios": []});
        let points = points(&comparison).unwrap();
        assert_eq!(choose_axis(&points), Axis::Theta);
        let lines = series(&points, Axis::Theta).unwrap();
        let labels: Vec<&str> = lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["raw", "txn"]);
        assert_eq!(lines[1].points, vec![(0.0, 9.0), (0.9, 7.0)]);
    }

    #[test]
    fn what_cannot_be_plotted_is_an_error() {
        assert!(points(&json!(3)).is_err());
        assert!(points(&json!({"benchmark": "index", "results": []})).unwrap().is_empty());
        assert!(points(&json!({"benchmark": "index"})).is_err());
        assert!(points(&json!({"benchmark": "tpcc", "threads": 1})).is_err());
        assert!(series(&[], Axis::Threads).is_err());
        let tpcc_point = points(&tpcc("engram", 1, 1.0)).unwrap();
        assert!(series(&tpcc_point, Axis::Theta).is_err(), "TPC-C has no skew");
    }

    #[test]
    fn rates_and_labels_format() {
        assert_eq!(short_rate(950.0), "950");
        assert_eq!(short_rate(12_000.0), "12K");
        assert_eq!(short_rate(1_550_000.0), "1.6M");
        assert_eq!(spread(vec![(0, 100), (1, 105), (2, 300)], 18), [(0, 100), (1, 118), (2, 300)]);
    }

    #[test]
    fn draws_png_and_svg() {
        let dir = std::env::temp_dir().join(format!("engram-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lines = vec![
            Series { label: "engram".into(), points: vec![(1.0, 90e3), (2.0, 170e3)] },
            Series { label: "sqlite".into(), points: vec![(1.0, 9e3), (2.0, 8e3)] },
        ];
        for name in ["t.png", "t.svg"] {
            let path = dir.join(name);
            draw(&lines, &Axis::Threads.frame(), "TPC-C", &path).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert!(bytes.len() > 1000, "{name}: {} bytes", bytes.len());
        }
        let svg = std::fs::read_to_string(dir.join("t.svg")).unwrap();
        assert!(svg.contains("engram") && svg.contains("sqlite") && svg.contains("worker threads"));
        assert!(draw(&lines, &Axis::Threads.frame(), "x", &dir.join("t.gif")).is_err());
        let bars =
            vec![("MVTO".to_string(), vec![1.5, 0.2]), ("MV2PL".to_string(), vec![3.0, 0.0])];
        let categories = vec!["NewOrder".to_string(), "Payment".to_string()];
        draw_bars(&categories, &bars, "aborts per commit (%)", "TPC-C", &dir.join("b.svg"))
            .unwrap();
        let svg = std::fs::read_to_string(dir.join("b.svg")).unwrap();
        assert!(svg.contains("NewOrder") && svg.contains("MV2PL") && svg.contains("aborts"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
