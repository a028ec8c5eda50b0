// berth marketplace: live search. The page works without this script;
// served by berth it asks the server (berth search's ranking), and in an
// exported copy it ranks the embedded index (search-index.js) with the
// same rules. It sends nothing anywhere but to the page's own origin.
(function () {
  "use strict";

  // Copy buttons for the install command.
  document.querySelectorAll("button.copy").forEach(function (btn) {
    btn.hidden = false;
    btn.addEventListener("click", function () {
      var el = document.getElementById(btn.dataset.copy);
      var text = el ? el.textContent : "";
      var done = function (msg) { btn.textContent = msg; setTimeout(function () { btn.textContent = "Copy"; }, 2000); };
      var selectIt = function () {
        var r = document.createRange(); r.selectNodeContents(el);
        var s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
        done("Selected: press Ctrl+C");
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { done("Copied"); }, selectIt);
      } else {
        selectIt();
      }
    });
  });

  var form = document.getElementById("search");
  if (!form) return;
  var input = document.getElementById("q");
  var params = function () {
    var p = new URLSearchParams();
    new FormData(form).forEach(function (v, k) {
      if (v !== "" && !(k === "sort" && v === "relevance")) p.set(k, v);
    });
    return p;
  };
  var timer = 0;
  var schedule = function (delay) { clearTimeout(timer); timer = setTimeout(update, delay); };
  input.addEventListener("input", function () { schedule(150); });
  form.querySelectorAll("select").forEach(function (s) { s.addEventListener("change", function () { schedule(0); }); });
  form.addEventListener("submit", function (e) { e.preventDefault(); schedule(0); });

  var update = window.berthIndex ? staticUpdate : serverUpdate;

  // Served: fetch the page for the query and take its results and counts.
  var seq = 0;
  function serverUpdate() {
    var p = params();
    var mine = ++seq;
    var url = form.getAttribute("action") + (p.toString() ? "?" + p.toString() : "");
    fetch(url, { headers: { Accept: "text/html" }, credentials: "same-origin" }).then(function (r) {
      return r.text().then(function (t) { return { ok: r.ok, text: t }; });
    }).then(function (res) {
      if (mine !== seq) return;
      var doc = new DOMParser().parseFromString(res.text, "text/html");
      var fresh = doc.getElementById("results");
      if (!fresh) {
        var msg = doc.querySelector(".problem");
        document.getElementById("count").textContent = msg ? msg.textContent : "The search failed.";
        return;
      }
      document.getElementById("results").replaceWith(fresh);
      doc.querySelectorAll("#search option[data-facet]").forEach(function (o) {
        var mineOpt = form.querySelector('select[name="' + o.dataset.facet + '"] option[value="' + CSS.escape(o.value) + '"]');
        if (mineOpt) mineOpt.textContent = o.textContent;
      });
      history.replaceState(null, "", url);
    }).catch(function () {
      if (mine === seq) document.getElementById("count").textContent = "The search failed: is berth marketplace serve still running?";
    });
  }

  // Exported: rank the embedded index as berth search does.
  var tierRank = { official: 0, verified: 1, community: 2 };
  var matchRank = function (e, text, words) {
    if (text === "") return 4;
    if (e.name === text) return 0;
    if (e.name.indexOf(text) === 0) return 1;
    var best = 2, desc = null, pub = null;
    for (var i = 0; i < words.length; i++) {
      var w = words[i];
      if (e.name.indexOf(w) >= 0) continue;
      var inTag = (e.tags || []).some(function (t) { return t.indexOf(w) >= 0; });
      if (inTag) { if (best === 2) best = 3; continue; }
      if (desc === null) { desc = e.description.toLowerCase(); pub = (e.publisher || "").toLowerCase(); }
      if (desc.indexOf(w) >= 0 || pub.indexOf(w) >= 0) { best = 4; continue; }
      return -1;
    }
    return best;
  };
  var statusOf = function (e) { return e.latest ? e.status : "none"; };
  var valuesOf = function (e, f) {
    switch (f) {
      case "catalog": return [e.catalog];
      case "tier": return [e.tier];
      case "tag": return e.tags || [];
      case "kind": return e.kinds || [];
      case "status": return [statusOf(e)];
    }
    return [];
  };
  var facets = ["catalog", "tier", "tag", "kind", "status"];

  function staticUpdate() {
    var idx = window.berthIndex;
    var p = params();
    var raw = p.get("q") || "";
    var text = raw.trim().toLowerCase();
    var words = text.split(/\s+/).filter(Boolean);
    var ranked = [];
    idx.plugins.forEach(function (e, i) {
      var m = matchRank(e, text, words);
      if (m >= 0) ranked.push({ e: e, m: m, i: i });
    });
    ranked.sort(function (a, b) {
      if (a.m !== b.m) return a.m - b.m;
      var ta = tierRank[a.e.tier], tb = tierRank[b.e.tier];
      if (ta !== tb) return ta - tb;
      if (a.e.name !== b.e.name) return a.e.name < b.e.name ? -1 : 1;
      if (a.e.catalog !== b.e.catalog) return a.e.catalog < b.e.catalog ? -1 : 1;
      return 0;
    });
    var pass = function (e, except) {
      return facets.every(function (f) {
        var want = p.get(f);
        return !want || f === except || valuesOf(e, f).indexOf(want) >= 0;
      });
    };
    var shown = ranked.filter(function (r) { return pass(r.e, ""); });
    if (p.get("sort") === "updated") {
      shown = shown.map(function (r, i) { r.pos = i; return r; }).sort(function (a, b) {
        return (b.e.updated - a.e.updated) || (a.pos - b.pos);
      });
    }
    var list = document.getElementById("cards");
    var byKey = {};
    list.querySelectorAll("li.card").forEach(function (li) { byKey[li.dataset.key] = li; li.hidden = true; });
    shown.forEach(function (r) {
      var li = byKey[r.e.key];
      if (li) { li.hidden = false; list.appendChild(li); }
    });
    facets.forEach(function (f) {
      var counts = {};
      ranked.forEach(function (r) {
        if (pass(r.e, f)) valuesOf(r.e, f).forEach(function (v) { counts[v] = (counts[v] || 0) + 1; });
      });
      form.querySelectorAll('select[name="' + f + '"] option[data-facet]').forEach(function (o) {
        o.textContent = o.dataset.label + " (" + (counts[o.value] || 0) + ")";
      });
    });
    var total = idx.plugins.length, cats = idx.catalogs;
    document.getElementById("count").textContent = shown.length + " of " + total + " " + (total === 1 ? "plugin" : "plugins") +
      " in " + cats + " " + (cats === 1 ? "catalog" : "catalogs") + (raw ? " match “" + raw + "”" : "") + ".";
    var empty = document.getElementById("empty");
    if (empty) {
      empty.hidden = shown.length > 0;
      var what = document.getElementById("empty-what");
      if (what) what.textContent = raw ? "“" + raw + "”" : "these filters";
    }
    var url = location.pathname + (p.toString() ? "?" + p.toString() : "");
    try { history.replaceState(null, "", url); } catch (err) { /* file:// may refuse; the search still works */ }
  }

  // An exported page opened with parameters (a tag link) applies them.
  if (window.berthIndex) {
    var start = new URLSearchParams(location.search);
    start.forEach(function (v, k) {
      var el = form.elements.namedItem(k);
      if (el) el.value = v;
    });
    if (start.toString()) staticUpdate();
  }
})();
