/**
 * The console's whole stylesheet, as a string module so a compiled single-file binary
 * carries it (nothing is read from disk or fetched at run time). Light and dark follow
 * `prefers-color-scheme`; one column on a phone.
 */
export const STYLE = `
:root { color-scheme: light dark; --bg:#f7f7f5; --fg:#1d1f21; --muted:#5b6169; --card:#fff;
  --line:#d9dbde; --accent:#1f5fbf; --ok:#1b7f3b; --bad:#b3261e; --warn:#8a5a00; --chip:#eef1f5; --on-accent:#fff; }
@media (prefers-color-scheme: dark) { :root { --bg:#15171a; --fg:#e6e6e6; --muted:#a0a6ad;
  --card:#1e2126; --line:#343941; --accent:#7fb0ff; --ok:#5fd38a; --bad:#ff8a80; --warn:#f0c060; --chip:#2a2f36; --on-accent:#0b1a33; } }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--fg); }
a { color:var(--accent); }
:focus-visible { outline:3px solid var(--accent); outline-offset:2px; }
.skip { position:absolute; left:-999px; } .skip:focus { left:8px; top:8px; background:var(--card); padding:6px; }
header { display:flex; flex-wrap:wrap; gap:8px 20px; align-items:center; padding:10px 20px; border-bottom:1px solid var(--line); background:var(--card); }
header .brand { font-weight:700; }
header nav { display:flex; gap:14px; flex-wrap:wrap; }
header nav a { text-decoration:none; padding:4px 2px; }
header nav a[aria-current=page] { font-weight:700; border-bottom:2px solid var(--accent); }
header .store { color:var(--muted); font-size:13px; overflow-wrap:anywhere; }
.mode { font-size:12px; padding:2px 8px; border-radius:10px; background:var(--chip); }
.mode.writes { color:var(--warn); }
header form { margin:0; }
main { max-width:1100px; margin:0 auto; padding:16px 20px 40px; }
h1 { font-size:22px; margin:8px 0 14px; } h2 { font-size:17px; margin:0 0 10px; }
.cards { display:grid; grid-template-columns:repeat(auto-fit, minmax(220px, 1fr)); gap:14px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:14px; }
.big { font-size:28px; font-weight:700; }
.muted, .rel { color:var(--muted); }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
.scroll { overflow-x:auto; background:var(--card); border:1px solid var(--line); border-radius:8px; }
code, pre, .mono { font-family:ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size:13px; }
pre { background:var(--chip); padding:12px; border-radius:6px; overflow-x:auto; margin:0; }
.state { display:inline-block; padding:1px 8px; border-radius:10px; background:var(--chip); font-size:13px; }
.state-dead { color:var(--bad); } .state-done { color:var(--ok); } .state-leased { color:var(--warn); }
form.filters { display:flex; flex-wrap:wrap; gap:10px 14px; align-items:flex-end; margin-bottom:14px; }
form.filters label, .field label { display:block; font-size:13px; color:var(--muted); }
input, select, button { font:inherit; padding:6px 8px; border:1px solid var(--line); border-radius:6px; background:var(--card); color:var(--fg); }
input[type=checkbox] { width:18px; height:18px; }
button { cursor:pointer; background:var(--accent); color:var(--on-accent); border-color:var(--accent); }
button.secondary { background:var(--card); color:var(--fg); border-color:var(--line); }

.error { color:var(--bad); font-size:13px; margin:4px 0 0; }
.notice { padding:10px 14px; border-radius:8px; border:1px solid var(--line); background:var(--card); margin:0 0 14px; }
.notice.bad { border-color:var(--bad); } .notice.ok { border-color:var(--ok); }
.empty { padding:24px; text-align:center; color:var(--muted); }
.pager { display:flex; gap:14px; align-items:center; margin-top:12px; flex-wrap:wrap; }
.actions { display:flex; gap:10px 14px; flex-wrap:wrap; align-items:flex-end; margin:14px 0; }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:6px 16px; margin:0; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; overflow-wrap:anywhere; }
.live-bar { display:flex; gap:12px; align-items:center; margin-bottom:12px; flex-wrap:wrap; }
svg.chart { width:100%; height:auto; max-height:160px; display:block; }
.card.wide { grid-column:1 / -1; }
svg.chart .line { fill:none; stroke:var(--accent); stroke-width:2; }
svg.chart .axis { stroke:var(--line); }
svg.chart text { fill:var(--muted); font-size:10px; }
.section { margin-top:14px; }
.accepted { color:var(--ok); } .rejected { color:var(--bad); }
@media (max-width:640px) { main { padding:12px; } th.wide, td.wide { display:none; } .big { font-size:24px; } }
`;

/** The tab icon: a ring with a dot ("once"), drawn in the accent colour. */
export const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><circle cx="16" cy="16" r="12" fill="none" stroke="#1f5fbf" stroke-width="4"/><circle cx="16" cy="16" r="4" fill="#1f5fbf"/></svg>`;
