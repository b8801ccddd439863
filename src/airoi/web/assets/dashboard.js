// airoi's dashboard: reads the public API (/api/v1) with the person's token, nothing else.
// Every money figure shown carries data-figure (the API field) and data-cents (its integer
// cents); every block of one window carries data-window. docs/dashboard.md.
"use strict";

(() => {
  const TOKEN_KEY = "airoi.token";
  const API = "/api/v1";
  const WINDOWS = [
    ["1yr", "1 year"],
    ["3yr", "3 years"],
    ["5yr", "5 years"],
    ["all", "All time"],
  ];
  const STAGES = {
    identified: "Identified", reviewing: "Reviewing", implementing: "Implementing",
    live: "Live", paused: "Paused", completed: "Completed", rejected: "Rejected",
    dismissed: "Dismissed",
  };
  const state = { window: "1yr", by: "month", rank: "net", initiatives: null };
  let generation = 0;
  let charts = [];

  // --- the token ------------------------------------------------------------------------

  function token() {
    return sessionStorage.getItem(TOKEN_KEY);
  }

  // Why the sign-in form is shown, when a link's token could not be read.
  const UNREADABLE_LINK = "The link's token could not be read (it may have been cut or " +
    "changed on the way). Paste the token below.";
  let signInMessage = "";

  function takeTokenFromFragment() {
    // Given once as #token=...: kept for the tab, then taken out of the address bar (and its
    // history entry), so it is not bookmarked, shared or shown on screen. Taken out even when
    // it cannot be decoded (a stray % in it): the tab is then signed out, saying why.
    const match = location.hash.match(/^#token=([^&]*)/);
    if (!match) return false;
    let given = null;
    try {
      given = decodeURIComponent(match[1]).trim();
    } catch (error) {
      given = null;
    }
    history.replaceState(null, "", location.pathname + location.search);
    if (given === null) {
      sessionStorage.removeItem(TOKEN_KEY);
      signInMessage = UNREADABLE_LINK;
    } else if (given) {
      sessionStorage.setItem(TOKEN_KEY, given);
      signInMessage = "";
    }
    return true;
  }

  // --- the API --------------------------------------------------------------------------

  class ApiFailure extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  // Integers past 2^53 are kept exact (as BigInt) where the browser gives the source text.
  function exactIntegers(key, value, context) {
    if (typeof value === "number" && !Number.isSafeInteger(value) && context &&
        /^-?\d+$/.test(context.source)) {
      return BigInt(context.source);
    }
    return value;
  }

  async function api(path, params) {
    const url = new URL(API + path, location.origin);
    for (const [name, value] of Object.entries(params || {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    let response;
    try {
      response = await fetch(url, {
        headers: { Authorization: `Bearer ${token()}`, Accept: "application/json" },
      });
    } catch (error) {
      throw new ApiFailure(0, "The server could not be reached.");
    }
    const text = await response.text();
    let body = null;
    try {
      body = JSON.parse(text, exactIntegers);
    } catch (error) {
      body = null;
    }
    if (!response.ok) {
      const message = body && body.error && body.error.message;
      throw new ApiFailure(response.status, message || `The server answered ${response.status}.`);
    }
    return body;
  }

  // Every page of a list (500 rows a page), with the envelope's other fields of the first.
  async function listAll(path, params) {
    const rows = [];
    let cursor = null;
    let first = null;
    do {
      const page = await api(path, { ...params, limit: 500, cursor });
      first = first || page;
      rows.push(...page.data);
      cursor = page.page.has_more ? page.page.next_cursor : null;
    } while (cursor);
    return { ...first, data: rows };
  }

  // The account's currency and the service's today (SEMANTICS R1: it may be a fixed day), as
  // the last year's summary gives them.
  async function account() {
    const roi = await api("/roi", { window: "1yr" });
    return { currency: roi.currency, today: roi.period.through };
  }

  async function initiativesById() {
    if (!state.initiatives) {
      const all = await listAll("/initiatives", { include_sample: true });
      state.initiatives = new Map(all.data.map((row) => [String(row.id), row]));
    }
    return state.initiatives;
  }

  // --- formatting -----------------------------------------------------------------------

  const formats = new Map();

  function currencyFormat(currency) {
    if (!formats.has(currency)) {
      let format;
      try {
        // Every amount is in hundredths of its unit, whatever the currency's own minor unit
        // (a JPY figure of 16724950 is 167,249.50), and is shown to the hundredth.
        format = new Intl.NumberFormat(undefined,
          { style: "currency", currency, minimumFractionDigits: 2, maximumFractionDigits: 2 });
      } catch (error) {
        format = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2 });
      }
      formats.set(currency, format);
    }
    return formats.get(currency);
  }

  // Cents as a decimal string ("-1234.05"): formatted without passing through a float.
  function decimal(cents) {
    const text = String(cents);
    const negative = text.startsWith("-");
    const digits = (negative ? text.slice(1) : text).padStart(3, "0");
    return `${negative ? "-" : ""}${digits.slice(0, -2)}.${digits.slice(-2)}`;
  }

  function formatCents(cents, currency) {
    return currencyFormat(currency || "USD").format(decimal(cents));
  }

  function units(cents) {
    return Number(cents) / 100;
  }

  const percentFormat = new Intl.NumberFormat(undefined, {
    style: "percent", minimumFractionDigits: 1, maximumFractionDigits: 1,
  });

  function percent(ratio) {
    if (ratio === null || ratio === undefined) return "—";
    // One decimal always, so that 25% and 30.1% side by side read as 25.0% and 30.1%.
    return percentFormat.format(ratio);
  }

  function day(text) {
    if (!text) return "—";
    const date = new Date(text.length === 10 ? `${text}T00:00:00Z` : text);
    return new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" })
      .format(date);
  }

  // "Last 12 months (Nov 27, 2025 – Nov 26, 2026)": a window's name and, but for all time,
  // its first and last days, as the API gives them.
  function windowWords(period) {
    return `${period.label}${period.from ? ` (${day(period.from)} – ${day(period.through)})` : ""}`;
  }

  // --- the DOM --------------------------------------------------------------------------

  function h(tag, attributes, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
      else element.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      element.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return element;
  }

  // A money figure, shown to the cent: figures side by side add up as shown (a value less a
  // cost is the net shown, the rows are their total). The API field it shows and its exact
  // cents ride along for anyone checking.
  function money(cents, currency, figure, key, attributes) {
    if (cents === null || cents === undefined) return h("span", { class: "none" }, "—");
    return h("span", {
      class: `money${Number(cents) < 0 ? " negative" : ""}`,
      "data-figure": figure,
      "data-cents": String(cents),
      "data-key": key === undefined ? null : String(key),
      ...attributes,
    }, formatCents(cents, currency));
  }

  function card(label, value, note) {
    return h("div", { class: "card" }, h("div", { class: "card-label" }, label),
      h("div", { class: "card-value" }, value), note ? h("div", { class: "card-note" }, note) : null);
  }

  function section(title, attributes, ...children) {
    const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
    return h("section", { class: "block", "aria-labelledby": id, ...attributes },
      h("h2", { id }, title), ...children);
  }

  // A set of buttons, one pressed; choosing one redraws the view and keeps the focus on it.
  function choices(label, options, current, choose) {
    return h("div", { class: "choices", role: "group", "aria-label": label },
      options.map(([value, text]) => h("button", {
        type: "button",
        "data-value": value,
        "aria-pressed": value === current ? "true" : "false",
        onclick: async () => {
          await choose(value);
          const again = document.querySelector(
            `[role=group][aria-label="${label}"] button[data-value="${value}"]`);
          if (again) again.focus();
        },
      }, text)));
  }

  function table(caption, headings, rows, attributes, foot) {
    return h("div", { class: "table-wrap" },
      h("table", attributes || {},
        caption ? h("caption", {}, caption) : null,
        h("thead", {}, h("tr", {}, headings.map((text) => {
          const [label, kind] = Array.isArray(text) ? text : [text, ""];
          return h("th", { scope: "col", class: kind || null }, label);
        }))),
        h("tbody", {}, rows),
        foot && foot.length ? h("tfoot", {}, foot) : null));
  }

  // A heading read by a screen reader but not shown (a column whose cells speak for
  // themselves on screen).
  function hidden(text) {
    return h("span", { class: "visually-hidden" }, text);
  }

  // A table wider than its block scrolls sideways inside it: the keyboard must be able to
  // reach it to scroll it, and a screen reader is told what it holds. Checked again when the
  // window's width changes or a <details> opens.
  function markScrollable() {
    for (const wrap of document.querySelectorAll("#view .table-wrap")) {
      const scrolls = wrap.scrollWidth > wrap.clientWidth;
      if (scrolls && !wrap.hasAttribute("tabindex")) {
        const heading = wrap.closest("section, details")
          ?.querySelector(":scope > h2, :scope > summary");
        wrap.setAttribute("tabindex", "0");
        wrap.setAttribute("role", "region");
        wrap.setAttribute("aria-label", `${heading ? heading.textContent : "Table"} (scrolls sideways)`);
      } else if (!scrolls && wrap.hasAttribute("tabindex")) {
        for (const name of ["tabindex", "role", "aria-label"]) wrap.removeAttribute(name);
      }
    }
  }

  function stageBadge(stage) {
    return h("span", { class: `badge stage-${stage}` }, STAGES[stage] || stage);
  }

  function initiativeLink(id, title) {
    return h("a", { href: `#/initiatives/${id}` }, title);
  }

  function setWidth(element, fraction) {
    // CSSOM, which the page's Content-Security-Policy allows (an inline style would not be).
    element.style.width = `${Math.max(0, Math.min(1, fraction)) * 100}%`;
    return element;
  }

  // --- charts (uPlot) -------------------------------------------------------------------

  // Short amounts for an axis and its legend: 12.5K from a thousand up; below, up to the
  // cent (a compact 0.25 reads 0, and an axis of small amounts read 0 at every tick).
  function compactMoney(currency) {
    const make = (options) => {
      try {
        return new Intl.NumberFormat(undefined, { style: "currency", currency, ...options });
      } catch (error) {
        return new Intl.NumberFormat(undefined, options);
      }
    };
    const compact = make({ notation: "compact", maximumFractionDigits: 1 });
    const small = make({ minimumFractionDigits: 0, maximumFractionDigits: 2 });
    return (value) => (value === null || value === undefined ? "—"
      : (Math.abs(value) < 1000 ? small : compact).format(value));
  }

  // Periods on x (one per row, labelled as the API labels them); each series its own style.
  // Drawn once the holder is in the page, as wide as it is (and redrawn when that changes).
  function periodChart(draws, holder, labels, series, currency) {
    draws.push(() => {
      const shown = compactMoney(currency);
      const bars = uPlot.paths.bars({ size: [0.6, 48] });
      const options = {
        width: Math.max(240, holder.clientWidth),
        height: 260,
        scales: { x: { time: false, range: (u, min, max) => [min - 0.6, max + 0.6] } },
        axes: [
          {
            incrs: [1, 2, 3, 4, 6, 12, 24],
            values: (u, splits) => splits.map((index) => labels[index] ?? ""),
            stroke: "#4a5568",
            grid: { show: false },
          },
          {
            values: (u, splits) => splits.map(shown),
            size: 64,
            stroke: "#4a5568",
            grid: { stroke: "#e2e8f0" },
          },
        ],
        cursor: { points: { size: 8 } },
        series: [
          { label: "Period", value: (u, index) => (index === null ? "—" : labels[index] ?? "—") },
          ...series.map((one) => ({
            label: one.label,
            stroke: one.color,
            fill: one.bars ? one.fill : undefined,
            width: one.bars ? 1 : 2,
            dash: one.dash,
            paths: one.bars ? bars : undefined,
            points: { show: !one.bars && !one.dash },
            value: (u, value) => shown(value),
          })),
        ],
      };
      const data = [labels.map((_, index) => index), ...series.map((one) => one.values)];
      const chart = new uPlot(options, data, holder);
      let width = holder.clientWidth;
      const resize = new ResizeObserver(() => {
        if (holder.clientWidth === width) return;
        width = holder.clientWidth;
        chart.setSize({ width: Math.max(240, width), height: 260 });
      });
      resize.observe(holder);
      charts.push({ chart, resize });
    });
  }

  function destroyCharts() {
    for (const { chart, resize } of charts) {
      resize.disconnect();
      chart.destroy();
    }
    charts = [];
  }

  // --- views ----------------------------------------------------------------------------

  async function portfolio(view, draws) {
    const windowName = state.window;
    const [roi, periods, byInitiative, byVendor, initiatives, integrations, statuses] =
      await Promise.all([
      api("/roi", { window: windowName }),
      listAll("/roi/breakdown", { by: state.by, window: windowName }),
      listAll("/roi/breakdown", { by: "initiative", window: windowName }),
      listAll("/roi/breakdown", { by: "vendor", window: windowName }),
      initiativesById(),
      listAll("/integrations"),
      listAll("/roi/breakdown", { by: "value_status", window: windowName }),
    ]);
    const currency = roi.currency;
    const today = roi.period.through || (await account()).today;
    const attention = integrations.data.filter((row) => needsAttention(row, today)).length;
    const notice = attention === 0 ? null : h("p", { class: "notice" },
      h("a", { href: "#/connections" }, attention === 1
        ? "1 connection needs attention" : `${attention} connections need attention`),
      ": what they bring in may be missing from recent figures.");
    const head = h("div", { class: "view-head" },
      h("div", {}, h("h1", {}, "Portfolio"), h("p", { class: "muted" },
        `${windowWords(roi.period)} · amounts in ${currency}`)),
      choices("Window", WINDOWS, windowName, (value) => { state.window = value; return render(); }));

    const total = roi.total_cost_cents;
    const capexShare = Number(total) > 0 ? Number(roi.cost.capex_cents) / Number(total) : 0;
    const summary = h("section", {
      class: "cards", "aria-label": "ROI summary", "data-window": windowName,
    },
    card("Approved value", money(roi.approved_value_cents, currency, "roi.approved_value_cents"),
      h("span", {}, "approved entries only; ",
        money(awaitingApproval(statuses.data), currency, "value_status.awaiting"),
        " more awaiting approval")),
    card("Total cost", money(total, currency, "roi.total_cost_cents")),
    card("Net value", money(roi.net_value_cents, currency, "roi.net_value_cents")),
    card("ROI", h("span", { "data-figure": "roi.roi" }, percent(roi.roi)),
      roi.roi === null ? "no cost in this window" : "net value over total cost"),
    card("Capex / opex", h("div", { class: "split-figures" },
      h("div", {}, h("span", { class: "muted" }, "capex "),
        money(roi.cost.capex_cents, currency, "roi.cost.capex_cents")),
      h("div", {}, h("span", { class: "muted" }, "opex "),
        money(roi.cost.opex_cents, currency, "roi.cost.opex_cents"))),
    h("div", { class: "split", "aria-hidden": "true" },
      setWidth(h("span", { class: "split-capex" }), capexShare),
      setWidth(h("span", { class: "split-opex" }), 1 - capexShare)),
    Number(total) > 0 ? `one-time ${percent(capexShare)} · running ${percent(1 - capexShare)}`
      : "no cost to split in this window"));

    // Value against cost over time.
    const rows = periods.data;
    const holder = h("div", {
      class: "chart", role: "img",
      "aria-label": `Approved value and total cost by ${state.by}; the figures are in the table below.`,
    });
    const over = section("Value against cost", { "data-window": windowName },
      choices("Period", [["month", "By month"], ["quarter", "By quarter"]], state.by,
        (value) => { state.by = value; return render(); }),
      holder,
      h("details", {},
        h("summary", {}, `Figures by ${state.by}`),
        table(null, ["Period", ["Approved value", "num"], ["Capex", "num"], ["Opex", "num"],
          ["Total cost", "num"], ["Net value", "num"]],
        rows.map((row) => h("tr", {},
          h("th", { scope: "row" }, row.label),
          ...["approved_value_cents", "capex_cents", "opex_cents", "total_cost_cents",
            "net_value_cents"].map((field) => h("td", { class: "num" },
            money(row[field], currency, `breakdown.${state.by}.${field}`, row.key))))))));

    // Initiatives ranked.
    const ranked = [...byInitiative.data].sort(state.rank === "net"
      ? (a, b) => Number(b.net_value_cents) - Number(a.net_value_cents)
      : (a, b) => (b.roi ?? -Infinity) - (a.roi ?? -Infinity));
    const ranking = section("Initiatives", { "data-window": windowName },
      choices("Rank by", [["net", "By net value"], ["roi", "By ROI"]], state.rank,
        (value) => { state.rank = value; return render(); }),
      table(null, ["#", "Initiative", "Stage", ["Approved value", "num"], ["Total cost", "num"],
        ["Net value", "num"], ["ROI", "num"]],
      ranked.map((row, index) => {
        const initiative = initiatives.get(String(row.key));
        return h("tr", {},
          h("td", { class: "rank" }, index + 1),
          h("th", { scope: "row" }, initiativeLink(row.key, row.label)),
          // data-label: each figure's name where a phone shows the row without the headings.
          h("td", {}, initiative ? stageBadge(initiative.stage) : "—"),
          h("td", { class: "num", "data-label": "Approved" }, money(row.approved_value_cents,
            currency, "breakdown.initiative.approved_value_cents", row.key)),
          h("td", { class: "num", "data-label": "Cost" }, money(row.total_cost_cents, currency,
            "breakdown.initiative.total_cost_cents", row.key)),
          h("td", { class: "num", "data-label": "Net" }, money(row.net_value_cents, currency,
            "breakdown.initiative.net_value_cents", row.key)),
          h("td", { class: "num", "data-label": "ROI" }, percent(row.roi)));
      }), { class: "ranked" }));

    // Cost by vendor, largest first.
    const vendors = [...byVendor.data].sort(
      (a, b) => Number(b.total_cost_cents) - Number(a.total_cost_cents));
    const largest = vendors.length ? Number(vendors[0].total_cost_cents) : 0;
    const vendorBlock = section("Cost by vendor", { "data-window": windowName },
      vendors.length === 0 ? h("p", { class: "muted" }, "No cost in this window.") :
        table(null, ["Vendor", ["Capex", "num"], ["Opex", "num"], ["Total cost", "num"],
          [hidden("Total cost against the largest vendor's"), "bar-cell"]],
          vendors.map((row) => h("tr", {},
            h("th", { scope: "row" }, row.key === null ? h("em", {}, row.label) : row.label),
            h("td", { class: "num" }, money(row.capex_cents, currency,
              "breakdown.vendor.capex_cents", row.key ?? "")),
            h("td", { class: "num" }, money(row.opex_cents, currency,
              "breakdown.vendor.opex_cents", row.key ?? "")),
            h("td", { class: "num" }, money(row.total_cost_cents, currency,
              "breakdown.vendor.total_cost_cents", row.key ?? "")),
            h("td", { class: "bar-cell", "aria-hidden": "true" },
              setWidth(h("span", { class: "bar" }),
                largest > 0 ? Number(row.total_cost_cents) / largest : 0))))));

    view.append(head, notice || "", summary, h("div", { class: "two" }, over, vendorBlock),
      ranking);
    periodChart(draws, holder, rows.map((row) => row.label), [
      { label: "Total cost", color: "#c05621", fill: "rgba(221,107,32,0.35)", bars: true,
        values: rows.map((row) => units(row.total_cost_cents)) },
      { label: "Approved value", color: "#2f855a",
        values: rows.map((row) => units(row.approved_value_cents)) },
    ], currency);
  }

  async function initiativeView(view, id, draws) {
    // The portfolio's window: an initiative opened from it is shown over the same span.
    const windowName = state.window;
    const [initiative, roi, budgets, decisions, months, cases, statuses] = await Promise.all([
      api(`/initiatives/${id}`),
      api("/roi", { initiative_id: id, window: windowName }),
      api("/budgets", { initiative_id: id, include_sample: true }),
      listAll("/decisions", { initiative_id: id }),
      listAll("/roi/breakdown", { by: "month", initiative_id: id, window: "1yr" }),
      api("/business_cases", { initiative_id: id, include_sample: true }),
      listAll("/roi/breakdown", { by: "value_status", initiative_id: id, window: windowName }),
    ]);
    const planCurrency = initiative.currency || roi.currency;
    const currency = roi.currency;
    const horizon = initiative.roi_time_horizon_years;
    const plan = (field) => money(initiative[field], planCurrency, `initiative.${field}`);
    const actual = (figure, cents) => money(cents, currency, figure);

    const head = h("div", { class: "view-head" },
      h("div", {},
        h("p", { class: "crumb" }, h("a", { href: "#/" }, "Portfolio"), " / initiative"),
        h("h1", {}, initiative.title),
        h("p", { class: "muted" }, stageBadge(initiative.stage),
          initiative.owner ? [" · owner ", h("bdi", {}, initiative.owner.name)] : "",
          initiative.category ? [" · ", h("bdi", {}, initiative.category)] : "",
          initiative.is_sample ? " · sample" : ""),
        h("p", { class: "muted", "data-window": windowName },
          `Actual figures: ${windowWords(roi.period)}`)),
      choices("Window", WINDOWS, windowName, (value) => { state.window = value; return render(); }),
    );
    const about = initiative.description ? h("p", { class: "lead" }, initiative.description) : null;

    const caseBlock = planBlock(cases.data[0], planCurrency, horizon, plan);
    const awaiting = awaitingApproval(statuses.data);
    const actualBlock = section(`Actual figures, ${roi.period.label.toLowerCase()}`,
      { "data-window": windowName },
      h("p", { class: "muted" }, `In ${currency}, ${windowWords(roi.period)}: approved value `
        + "entries and all cost dated in the window."),
      h("dl", { class: "figures" },
        h("dt", {}, "One-time cost (capex)"),
        h("dd", {}, actual("roi.cost.capex_cents", roi.cost.capex_cents)),
        h("dt", {}, "Running cost (opex)"),
        h("dd", {}, actual("roi.cost.opex_cents", roi.cost.opex_cents)),
        h("dt", {}, "Total cost"), h("dd", {}, actual("roi.total_cost_cents", roi.total_cost_cents)),
        h("dt", {}, "Approved value"),
        h("dd", {}, actual("roi.approved_value_cents", roi.approved_value_cents)),
        h("dt", {}, "Net value"), h("dd", {}, actual("roi.net_value_cents", roi.net_value_cents)),
        h("dt", {}, "ROI"), h("dd", { "data-figure": "roi.roi" }, percent(roi.roi)),
        h("dt", {}, "Value awaiting approval"),
        h("dd", {}, money(awaiting, currency, "value_status.awaiting"))),
      valueStatusDetails(statuses.data, currency));

    const row = budgets.data[0];
    let budgetBlock;
    const holder = h("div", {
      class: "chart", role: "img",
      "aria-label": "Spend by month over the last year against the budget's monthly rate; the figures are in the table below.",
    });
    if (!row) {
      budgetBlock = section("Budget against spend", {}, h("p", { class: "muted" }, "No budget row."));
    } else {
      const bc = row.currency || currency;
      const b = (field) => money(row[field], bc, `budgets.${field}`);
      budgetBlock = section("Budget against spend", {},
        h("p", {}, statusBadge(row.status, row.over_parts),
          row.budget_started_on ? ` since ${day(row.budget_started_on)}` : "",
          ` · as of ${day(row.as_of)}`),
        row.budgeted ? null : h("p", { class: "muted" },
          "No approved budget: spend is compared against nothing and left out of any variance."),
        h("dl", { class: "figures" },
          h("dt", {}, "Budget to date"), h("dd", {}, b("budget_to_date_cents")),
          h("dt", {}, "Actual to date"), h("dd", {}, b("actual_to_date_cents")),
          h("dt", {}, "Variance (+ under)"), h("dd", {}, b("variance_cents")),
          h("dt", {}, "Used"), h("dd", {}, percent(row.used_ratio)),
          h("dt", {}, "Capex budget / actual"),
          h("dd", {}, b("capex_budget_cents"), " / ", b("capex_actual_cents")),
          h("dt", {}, "Opex budget / actual to date"),
          h("dd", {}, b("opex_budget_to_date_cents"), " / ", b("opex_actual_cents")),
          h("dt", {}, "Monthly rate: budget / actual"),
          h("dd", {}, b("budget_monthly_run_rate_cents"), " / ", b("actual_monthly_run_rate_cents")),
          h("dt", {}, "Spent before the budget"), h("dd", {}, b("spent_before_budget_cents"))),
        projection(row, bc),
        h("div", { class: "burn", "data-window": "1yr" },
        h("h3", {}, "Monthly burn, last 12 months"),
        row.budgeted && row.currency && row.currency !== currency ? h("p", { class: "muted" },
          `Spend in ${currency}; the budget is kept in ${row.currency}, so its monthly rate is `
          + "not drawn against it.") : null,
        holder,
        h("details", {}, h("summary", {}, "Figures by month"),
          table(null, ["Month", ["Capex", "num"], ["Opex", "num"], ["Total cost", "num"]],
            months.data.map((month) => h("tr", {}, h("th", { scope: "row" }, month.label),
              ...["capex_cents", "opex_cents", "total_cost_cents"].map((field) => h("td",
                { class: "num" }, money(month[field], currency, `breakdown.month.${field}`,
                  month.key)))))))));
    }

    const recent = [...decisions.data].sort((a, b) =>
      String(b.decided_at || "").localeCompare(String(a.decided_at || ""))).slice(0, 5);
    const decisionBlock = section("Recent decisions", {},
      recent.length === 0 ? h("p", { class: "muted" }, "No decisions recorded.") :
        h("ol", { class: "decisions" }, recent.map((decision) => h("li", {},
          h("div", { class: "decision-head" },
            h("span", { class: `badge outcome-${decision.outcome}` }, decision.outcome_label),
            h("time", { datetime: decision.decided_at || "" }, day(decision.decided_at)),
            decision.decided_by ? h("span", { class: "muted" }, decision.decided_by.name) : null,
            decision.stage_changed ? h("span", { class: "muted" },
              `${STAGES[decision.stage_before]} → ${STAGES[decision.stage_after]}`) : null),
          h("p", {}, decision.rationale),
          decision.net_cents === null || decision.net_cents === undefined ? null :
            h("p", { class: "muted" }, "Net at the time: ",
              money(decision.net_cents, decision.currency || currency, "decisions.net_cents",
                decision.id))))));

    view.append(head, about || "", h("div", { class: "two" }, caseBlock, actualBlock),
      budgetBlock, decisionBlock);
    if (row) {
      // Spend is in the account currency; the budget's rate is drawn beside it only when the
      // budget is kept in that currency too.
      const rate = row.budgeted && (row.currency || currency) === currency
        ? units(row.budget_monthly_run_rate_cents) : null;
      periodChart(draws, holder, months.data.map((month) => month.label), [
        { label: "Opex", color: "#c05621", fill: "rgba(221,107,32,0.35)", bars: true,
          values: months.data.map((month) => units(month.opex_cents)) },
        { label: "Capex", color: "#2b6cb0",
          values: months.data.map((month) => units(month.capex_cents)) },
        rate === null ? null : { label: "Budgeted monthly rate", color: "#2d3748", dash: [6, 4],
          values: months.data.map(() => rate) },
      ].filter(Boolean), currency);
    }
  }

  // The business case held against actuals to date (GET /business_cases, SEMANTICS R43-R45),
  // in the plan's currency: the plan over its horizon, the part due by today, what arrived.
  function planBlock(row, planCurrency, horizon, plan) {
    const title = "Business case against actuals";
    if (!row || !row.has_business_case) {
      return section(title, { "data-plan": "none" },
        h("p", { class: "muted" }, "No business case: no expected capex, opex, savings or "
          + "revenue uplift is recorded, so there is nothing to hold the actuals against."),
        row ? h("p", {}, "Cost to date ", money(row.cost_to_date_cents, row.currency,
          "business_cases.cost_to_date_cents"), " · approved value to date ",
        money(row.approved_value_to_date_cents, row.currency,
          "business_cases.approved_value_to_date_cents")) : null);
    }
    const c = row.currency || planCurrency;
    const f = (field) => money(row[field], c, `business_cases.${field}`);
    const figureRow = (label, planned, due, actualCell) => h("tr", {},
      h("th", { scope: "row" }, label), h("td", { class: "num" }, planned),
      h("td", { class: "num" }, due), h("td", { class: "num" }, actualCell));
    const none = () => h("span", { class: "none" }, "—");
    const started = row.plan_started_on
      ? `The plan started in ${monthWords(row.plan_started_on)}: ${row.months_elapsed} of `
        + `${horizon ? horizon * 12 : "?"} months elapsed.`
      : "The initiative has not gone live, so no part of the plan is due yet.";
    const realized = row.value_realization_ratio === null ? null
      : h("p", { "data-figure": "business_cases.value_realization_ratio" },
        `Value realized: ${percent(row.value_realization_ratio)} of the value due by now.`);
    const payback = h("p", { "data-figure": "business_cases.payback_month" },
      row.payback_month ? `Paid back in ${monthWords(row.payback_month)}: the cumulative net `
        + "has stayed at or above zero since." : "Not paid back: the cumulative net to date is "
        + "below zero, or there is no cost yet.");
    return section(title, { "data-plan": "case" },
      h("p", { class: "muted" }, `In ${c}, as of ${day(row.as_of)}. The plan's totals cover `
        + `${horizon ? `${horizon} years` : "an unstated horizon"}; "due by now" is their share `
        + "for the months elapsed (capex at once); actuals are every entry dated to date."),
      table(null, [hidden("Figure"), ["Plan", "num"], ["Due by now", "num"],
        ["Actual to date", "num"]], [
        figureRow("One-time cost (capex)", f("planned_capex_cents"), none(), f("capex_to_date_cents")),
        figureRow("Running cost (opex)", f("planned_opex_cents"), none(), f("opex_to_date_cents")),
        figureRow("Total cost", f("planned_cost_cents"), f("planned_cost_to_date_cents"),
          f("cost_to_date_cents")),
        figureRow("Value (savings + uplift; approved)", f("planned_value_cents"),
          f("planned_value_to_date_cents"), f("approved_value_to_date_cents")),
        figureRow("Net value", f("planned_net_value_cents"), none(), f("net_value_to_date_cents")),
        figureRow("ROI", h("span", { "data-figure": "business_cases.planned_roi" },
          percent(row.planned_roi)), none(),
        h("span", { "data-figure": "business_cases.roi_to_date" }, percent(row.roi_to_date))),
      ]),
      h("p", { class: "muted" }, "Savings ", plan("expected_cost_savings_cents"),
        " + revenue uplift ", plan("expected_revenue_uplift_cents"), " in the plan."),
      h("p", {}, started), realized, payback);
  }

  function monthWords(text) {
    return new Intl.DateTimeFormat(undefined, { month: "long", year: "numeric", timeZone: "UTC" })
      .format(new Date(`${text}T00:00:00Z`));
  }

  // Value entries not yet approved (SPEC 3: draft, calculated, reviewed): on their way into
  // the approved value, from GET /roi/breakdown?by=value_status.
  const AWAITING = ["draft", "calculated", "reviewed"];

  function awaitingApproval(rows) {
    return rows.filter((row) => AWAITING.includes(row.key))
      .reduce((sum, row) => sum + BigInt(row.value_cents), 0n).toString();
  }

  function valueStatusDetails(rows, currency) {
    return h("details", {}, h("summary", {}, "Value entries by status"),
      table(null, ["Status", ["Value", "num"]], rows.map((row) => h("tr", {},
        h("th", { scope: "row" }, row.label),
        h("td", { class: "num" }, money(row.value_cents, currency, "breakdown.value_status.value_cents",
          row.key))))));
  }

  // Where the fiscal year lands at the actual monthly rate (SEMANTICS R46).
  function projection(row, currency) {
    if (!row.budgeted) return null;
    if (row.projected_opex_fiscal_year_cents === null) {
      return h("p", { class: "muted", "data-projection": "none" }, "No fiscal-year projection "
        + "until the budget has a complete month of spend.");
    }
    const variance = BigInt(row.projected_fiscal_year_variance_cents);
    const gap = money((variance < 0n ? -variance : variance).toString(), currency,
      "projection.gap");
    return h("p", { "data-projection": row.projected_fiscal_year_status },
      "At this pace the fiscal year's opex comes to ",
      money(row.projected_opex_fiscal_year_cents, currency, "budgets.projected_opex_fiscal_year_cents"),
      " against a budget of ",
      money(row.opex_budget_fiscal_year_cents, currency, "budgets.opex_budget_fiscal_year_cents"),
      variance < 0n ? [": it ends ", gap, " over."] : variance > 0n ? [": it ends ", gap, " under."]
        : ": it ends on budget.");
  }

  function statusBadge(status, overParts) {
    const words = { over: "Over budget", within: "Within budget", scheduled: "Scheduled",
      no_budget: "No budget" };
    const parts = status === "over" && overParts.length ? ` (${overParts.join(", ")})` : "";
    return h("span", { class: `badge status-${status}`, "data-status": status },
      `${words[status] || status}${parts}`);
  }

  async function budgetsView(view) {
    const [budgets, initiatives, { currency: accountCurrency }] = await Promise.all([
      listAll("/budgets"), initiativesById(), account()]);
    // A row with no currency of its own is in the account's (SEMANTICS R4).
    const currencyOf = (row) => row.currency || accountCurrency;
    const groups = [
      ["over", "Over budget"], ["within", "Within budget"], ["scheduled", "Scheduled"],
      ["no_budget", "Unbudgeted"],
    ];
    const title = (row) => {
      const initiative = initiatives.get(String(row.initiative_id));
      return initiativeLink(row.initiative_id, initiative ? initiative.title : `#${row.initiative_id}`);
    };
    const fields = ["budget_to_date_cents", "actual_to_date_cents", "variance_cents"];
    // Each row is in its initiative's currency: a total is made of one currency's rows only, a
    // line per currency, each saying which.
    const totals = (rows, scope, span) => {
      const by = new Map();
      for (const row of rows.filter((one) => one.budgeted)) {
        const sums = by.get(currencyOf(row)) || fields.map(() => 0n);
        fields.forEach((field, index) => { sums[index] += BigInt(String(row[field] ?? 0)); });
        by.set(currencyOf(row), sums);
      }
      return [...by.keys()].sort().map((currency) => h("tr", { "data-currency": currency },
        h("th", { scope: "row" }, `Total in ${currency}`),
        by.get(currency).map((cents, index) => h("td", { class: "num", "data-label": labels[index] },
          money(cents, currency, `budgets.total.${fields[index]}`, `${scope}:${currency}`))),
        span ? h("td", { colspan: span }) : null));
    };
    // data-label: each figure's name where a phone shows a row without the headings.
    const labels = ["Budget to date", "Actual to date", "Variance"];
    const budgeted = budgets.data.filter((row) => row.budgeted);
    const currencies = new Set(budgeted.map(currencyOf));
    view.append(h("div", { class: "view-head" }, h("div", {}, h("h1", {}, "Budgets"),
      h("p", { class: "muted" }, "Approved budgets against spend, one row per initiative, each in "
        + "its initiative's currency.", currencies.size > 1
        ? ` Totals are kept apart by currency (${[...currencies].sort().join(", ")}).` : ""))));
    if (budgeted.length) {
      view.append(section("Totals by currency", { "data-status": "all" },
        table(null, [["Currency", ""], ["Budget to date", "num"], ["Actual to date", "num"],
          ["Variance", "num"]], totals(budgeted, "all", 0), { class: "budget-table" })));
    }
    for (const [status, heading] of groups) {
      const rows = budgets.data.filter((row) => row.status === status);
      const content = rows.length === 0 ? h("p", { class: "muted" }, "None.") :
        status === "no_budget"
          ? h("ul", { class: "plain" }, rows.map((row) => h("li", { "data-initiative": row.initiative_id },
            title(row))))
          : table(null, ["Initiative", ["Budget to date", "num"], ["Actual to date", "num"],
            ["Variance", "num"], ["Used", "num"], status === "scheduled" ? "Starts" : "Over"],
          rows.map((row) => {
            const c = currencyOf(row);
            return h("tr", { "data-initiative": row.initiative_id },
              h("th", { scope: "row" }, title(row)),
              h("td", { class: "num", "data-label": labels[0] }, money(row.budget_to_date_cents, c, "budgets.budget_to_date_cents", row.initiative_id)),
              h("td", { class: "num", "data-label": labels[1] }, money(row.actual_to_date_cents, c, "budgets.actual_to_date_cents", row.initiative_id)),
              h("td", { class: "num", "data-label": labels[2] }, money(row.variance_cents, c, "budgets.variance_cents", row.initiative_id)),
              h("td", { class: "num", "data-label": "Used" }, percent(row.used_ratio)),
              h("td", { "data-label": status === "scheduled" ? "Starts" : "Over" },
                status === "scheduled" ? day(row.budget_started_on)
                  : (row.over_parts.join(", ") || "—")));
          }), { class: "budget-table" }, totals(rows, status, 2));
      view.append(section(`${heading} (${rows.length})`, { "data-status": status }, content));
    }
  }

  // Data stops arriving when no data came for more than this many days.
  const STALE_DAYS = 7;

  // Whole days from one date (or date-time, by its UTC date) to another.
  function daysBetween(from, to) {
    const date = (text) => Date.parse(`${String(text).slice(0, 10)}T00:00:00Z`);
    return Math.round((date(to) - date(from)) / 86400000);
  }

  // Why a connection's data has stopped arriving, or null when it has not: the platform
  // refused the grant (a person must reconnect), syncs are failing, or no data came for more
  // than STALE_DAYS days before the service's today (a connection disconnected counts; one
  // paused on purpose does not).
  function attentionReason(row, today) {
    if (row.reauth_required_at) {
      return `The platform refused the grant on ${day(row.reauth_required_at)}: a person must `
        + "reconnect it.";
    }
    if (row.status === "error") {
      return `Syncs are failing (last sync: ${row.last_sync_status || "unknown"}).`;
    }
    if (row.status === "paused" || !today) return null;
    const since = row.last_synced_at || row.created_at;
    const days = daysBetween(since, today);
    if (days <= STALE_DAYS) return null;
    const status = row.status === "disconnected" ? "It was disconnected, and no"
      : `It is ${row.status}, yet no`;
    return row.last_synced_at
      ? `${status} data has arrived for ${days} days (since ${day(row.last_synced_at)}).`
      : `${status} data has arrived since it was connected on ${day(row.created_at)}.`;
  }

  function needsAttention(row, today) {
    return attentionReason(row, today) !== null;
  }

  // The cost entries each connection brought in (source.connection_id), in the account's
  // currency (account_amount_cents, SEMANTICS R35). The API has no filter by connection, so
  // the entries are walked, at most SPEND_PAGES pages of 500: past that the sums are of the
  // entries read, and say so.
  const SPEND_PAGES = 20;

  async function spendByConnection() {
    const by = new Map();
    let cursor = null;
    let pages = 0;
    do {
      const page = await api("/cost_entries", { limit: 500, cursor });
      pages += 1;
      for (const entry of page.data) {
        const id = entry.source && entry.source.connection_id;
        if (id === null || id === undefined) continue;
        const spend = by.get(String(id)) || { cents: 0n, entries: 0, latest: null };
        if (entry.account_amount_cents !== null && entry.account_amount_cents !== undefined) {
          spend.cents += BigInt(String(entry.account_amount_cents));
        }
        spend.entries += 1;
        if (entry.reported_on && (!spend.latest || entry.reported_on > spend.latest)) {
          spend.latest = entry.reported_on;
        }
        by.set(String(id), spend);
      }
      cursor = page.page.has_more ? page.page.next_cursor : null;
    } while (cursor && pages < SPEND_PAGES);
    return { by, complete: cursor === null, read: pages };
  }

  async function connectionsView(view) {
    const [integrations, { currency, today }] = await Promise.all([
      listAll("/integrations"), account()]);
    const attention = integrations.data.filter((row) => needsAttention(row, today));
    const others = integrations.data.filter((row) => !attention.includes(row));
    const spend = attention.length ? await spendByConnection() : null;
    const name = (row) => row.name || row.platform;
    // Past the walk's bound the sums are of the entries read (credits included, so not
    // "at least"): each says so.
    const partly = spend && !spend.complete ? `, in the first ${spend.read * 500} cost entries read` : "";
    const carried = (row) => {
      const one = spend.by.get(String(row.id));
      if (!one) {
        return h("p", { "data-spend": "none" }, spend.complete
          ? "It brought in no cost entries."
          : `None of the first ${spend.read * 500} cost entries read came from it.`);
      }
      return h("p", {}, `Spend it carried${partly}: `,
        money(one.cents, currency, "cost_entries.account_amount_cents", row.id),
        ` in ${one.entries} cost ${one.entries === 1 ? "entry" : "entries"}`,
        one.latest ? `, the latest dated ${day(one.latest)}.` : ".");
    };
    const together = spend ? attention.reduce((sum, row) =>
      sum + (spend.by.get(String(row.id))?.cents ?? 0n), 0n) : 0n;
    view.append(h("div", { class: "view-head" }, h("div", {}, h("h1", {}, "Connections"),
      h("p", { class: "muted" }, "Connections to other platforms; credentials are never shown."))));
    view.append(section(`Needing attention (${attention.length})`, { "data-attention": "true" },
      attention.length === 0 ? h("p", { class: "muted" }, "Every connection is syncing.") : [
        h("p", { class: "muted" }, "Their data has stopped arriving: the syncs fail, the "
          + `platform wants a person to reconnect, or nothing came for over ${STALE_DAYS} days `
          + `up to ${day(today)} (a connection paused on purpose is not counted). `
          + `Spend is in ${currency}, from the cost entries each brought in.`,
          spend.complete ? "" : ` Only the first ${spend.read * 500} cost entries were read: `
            + "the figures are of those."),
        h("ul", { class: "attention" }, attention.map((row) => h("li", { "data-integration": row.id },
          h("strong", {}, name(row)), h("span", { class: "muted" }, " · ", h("bdi", {}, row.platform)),
          h("p", {}, attentionReason(row, today)),
          carried(row),
          h("p", { class: "muted" }, `Status ${row.status} · data last arrived ${day(row.last_synced_at)}`)))),
        attention.length > 1 ? h("p", { class: "together" }, `Together they carried${partly} `,
          money(together, currency, "cost_entries.account_amount_cents", "attention"), ".") : null,
      ]));
    view.append(section(`Other connections (${others.length})`, {},
      table(null, ["Connection", "Platform", "Status", "Data last arrived"],
        others.map((row) => h("tr", { "data-integration": row.id },
          h("th", { scope: "row" }, name(row)), h("td", {}, row.platform),
          h("td", {}, h("span", { class: `badge conn-${row.status}` }, row.status)),
          h("td", {}, day(row.last_synced_at)))))));
  }

  // --- routing and sign-in --------------------------------------------------------------

  function showAlert(message) {
    const alert = document.getElementById("alert");
    alert.textContent = message || "";
    alert.hidden = !message;
  }

  function showSignIn(message) {
    showAlert("");
    destroyCharts();
    document.getElementById("view").replaceChildren();
    document.getElementById("nav").hidden = true;
    document.getElementById("sign-out").hidden = true;
    document.getElementById("signin").hidden = false;
    const error = document.getElementById("signin-error");
    error.textContent = message || "";
    error.hidden = !message;
    document.getElementById("token").focus();
  }

  async function render() {
    const current = ++generation;
    const draws = []; // this render's charts, drawn once its view is in the page
    if (!token()) {
      showSignIn(signInMessage);
      signInMessage = "";
      return;
    }
    document.getElementById("signin").hidden = true;
    document.getElementById("nav").hidden = false;
    document.getElementById("sign-out").hidden = false;
    const route = location.hash.replace(/^#/, "") || "/";
    const initiative = route.match(/^\/initiatives\/(\d+)$/);
    const name = initiative ? "initiative" : route === "/budgets" ? "budgets"
      : route === "/connections" ? "connections" : "portfolio";
    for (const link of document.querySelectorAll("#nav a")) {
      if (link.dataset.view === name) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    const view = h("div", { class: "view", "data-view": name });
    document.body.dataset.state = "loading";
    // Titles and stages as they are now: a load may have changed them since the last view
    // (asked again each view; the API answers 304 to what the browser holds unchanged).
    state.initiatives = null;
    try {
      if (initiative) await initiativeView(view, initiative[1], draws);
      else if (name === "budgets") await budgetsView(view);
      else if (name === "connections") await connectionsView(view);
      else await portfolio(view, draws);
    } catch (error) {
      if (current !== generation) return;
      document.body.dataset.state = "error";
      if (error instanceof ApiFailure && error.status === 401) {
        sessionStorage.removeItem(TOKEN_KEY);
        state.initiatives = null;
        showSignIn(error.message);
        return;
      }
      // What was shown before is another view's (or another token's): not under this one.
      destroyCharts();
      document.getElementById("view").replaceChildren();
      showAlert(error instanceof ApiFailure ? error.message : "The page could not be shown.");
      if (!(error instanceof ApiFailure)) console.warn(error);
      return;
    }
    if (current !== generation) return;
    showAlert("");
    destroyCharts();
    document.getElementById("view").replaceChildren(view);
    for (const draw of draws) draw();
    markScrollable();
    document.body.dataset.state = "ready";
  }

  function start() {
    takeTokenFromFragment();
    window.addEventListener("resize", markScrollable);
    // A <details> opened shows its table: toggle does not bubble, so it is caught on the way down.
    document.addEventListener("toggle", markScrollable, true);
    document.getElementById("signin-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const given = document.getElementById("token").value.trim();
      if (!given) return;
      sessionStorage.setItem(TOKEN_KEY, given);
      document.getElementById("token").value = "";
      state.initiatives = null;
      render().then(() => document.getElementById("main").focus({ preventScroll: true }));
    });
    document.getElementById("sign-out").addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      state.initiatives = null;
      showAlert("");
      showSignIn("");
    });
    // A new view starts at its top, and the keyboard's next Tab goes into its content.
    window.addEventListener("hashchange", () => {
      // A link with #token= opened in this tab: another account's token, perhaps.
      if (takeTokenFromFragment()) state.initiatives = null;
      render().then(() => {
        window.scrollTo(0, 0);
        document.getElementById("main").focus({ preventScroll: true });
      });
    });
    render();
  }

  start();
})();
