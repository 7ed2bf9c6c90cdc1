// pi session page: the tree, search and the conversation of one branch at a time.
// Articles are stored as inert text (script elements of type text/x-pi, written by pi with
// every session text escaped) and become elements only when they are about to be seen.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var T0 = performance.now(), timings = {};
  var D = JSON.parse($("pi-data").textContent);
  timings.data = Math.round(performance.now() - T0);
  var n = D.ids.length, P = D.parent, K = D.kind, PV = D.prev, TS = D.ts, SH = D.show;
  var ROW = 22, GROUP = 40, EAGER = "uCBmhli";
  var byId = new Map();
  for (var i = 0; i < n; i++) byId.set(D.ids[i], i);
  var label = new Map();
  D.labels.forEach(function (x) { label.set(x[0], x[1]); });

  // Children in timestamp order (then file order), as compressed lists.
  var start = new Int32Array(n + 1), kids = new Int32Array(n), roots = [];
  for (i = 0; i < n; i++) { if (P[i] >= 0) start[P[i] + 1]++; else roots.push(i); }
  for (i = 0; i < n; i++) start[i + 1] += start[i];
  var fill = start.slice(0, n);
  for (i = 0; i < n; i++) if (P[i] >= 0) kids[fill[P[i]]++] = i;
  var byTime = function (a, b) { return (TS[a] - TS[b]) || (a - b); };
  for (i = 0; i < n; i++) {
    if (start[i + 1] - start[i] > 1) {
      var part = Array.prototype.slice.call(kids, start[i], start[i + 1]).sort(byTime);
      for (var k = 0; k < part.length; k++) kids[start[i] + k] = part[k];
    }
  }
  function children(i) { return kids.subarray(start[i], start[i + 1]); }

  // The latest entry (in the file) under each entry: the leaf of its newest branch.
  var last = new Int32Array(n), order = [], stack = roots.slice();
  for (i = 0; i < n; i++) last[i] = i;
  while (stack.length) {
    var x = stack.pop();
    order.push(x);
    var c = children(x);
    for (k = 0; k < c.length; k++) stack.push(c[k]);
  }
  for (k = order.length - 1; k >= 0; k--) {
    x = order[k];
    if (P[x] >= 0 && last[x] > last[P[x]]) last[P[x]] = last[x];
  }

  function pathTo(i) {
    var p = [], guard = 0;
    while (i >= 0 && guard++ <= n) { p.push(i); i = P[i]; }
    return p.reverse();
  }

  var conv = $("conv"), main = $("main"), rowsEl = $("rows"), spacer = $("spacer");
  var q = $("q"), only = $("only"), countEl = $("count"), branchEl = $("branch");
  var leaf = -1, path = [], onPath = new Uint8Array(n), cur = -1;
  var rows = [], prefixes = [], filtered = null;
  var articles = new Map(), groupOf = new Map();

  // ---- the tree pane --------------------------------------------------------------
  // Side branches are indented one level each, up to MAXI levels; a deeper row starts
  // with its level (\u22ee42) and draws its innermost MAXI - 1 levels, so the prefixes stay
  // short however deeply branches nest. A level is kept once, shared by its rows:
  // GM[g] (its gutter line continues below) and GU[g] (the level around it, -1 for none).
  var MAXI = 16;
  function layout() {
    rows = []; prefixes = [];
    var st = [], GM = [], GU = [], lv = [];
    var rs = roots.filter(function (r) { return onPath[r]; }).concat(roots.filter(function (r) { return !onPath[r]; }));
    for (var a = rs.length - 1; a >= 0; a--) st.push([rs[a], -1, 0, null]);
    while (st.length) {
      var it = st.pop(), g = it[1], depth = it[2], pre = "";
      var drawn = depth > MAXI ? MAXI - 1 : depth;
      lv.length = 0;
      for (var u = g; lv.length < drawn && u >= 0; u = GU[u]) lv.push(GM[u]);
      if (depth > drawn) pre = "\u22ee" + depth + " ";
      for (var l = lv.length - 1; l >= 0; l--) {
        if (l === 0 && it[3] !== null) pre += it[3] ? "\u2514\u2500 " : "\u251c\u2500 ";
        else pre += lv[l] ? "\u2502  " : "   ";
      }
      rows.push(it[0]); prefixes.push(pre);
      var c = children(it[0]);
      if (!c.length) continue;
      var mainChild = c[0];
      for (var j = 0; j < c.length; j++) if (onPath[c[j]]) { mainChild = c[j]; break; }
      st.push([mainChild, g, depth, null]);
      var sides = [];
      for (j = 0; j < c.length; j++) if (c[j] !== mainChild) sides.push(c[j]);
      for (j = sides.length - 1; j >= 0; j--) {
        var last1 = j + 1 === sides.length;
        GM.push(!last1); GU.push(g);
        st.push([sides[j], GM.length - 1, depth + 1, last1]);
      }
    }
  }

  var lower = null;
  function matches(i, text, kind) {
    if (kind === "u" && K[i] !== "u") return false;
    if (kind === "l" && !label.has(i)) return false;
    if (kind === "t" && !("tebA".indexOf(K[i]) >= 0 || (K[i] === "a" && PV[i].indexOf("\u2192") >= 0))) return false;
    if (kind === "e" && "eA".indexOf(K[i]) < 0) return false;
    if (kind === "s" && "CB".indexOf(K[i]) < 0) return false;
    if (!text) return true;
    if (!lower) lower = PV.map(function (s) { return s.toLowerCase(); });
    if (lower[i].indexOf(text) >= 0) return true;
    var l = label.get(i);
    return l !== undefined && l.toLowerCase().indexOf(text) >= 0;
  }

  function applyFilter() {
    var text = q.value.trim().toLowerCase(), kind = only.value;
    if (!text && !kind) { filtered = null; countEl.textContent = n + " entries"; }
    else {
      filtered = [];
      for (var r = 0; r < rows.length; r++) if (matches(rows[r], text, kind)) filtered.push(rows[r]);
      countEl.textContent = filtered.length + " of " + n + " entries match";
    }
    spacer.style.height = (shown().length * ROW) + "px";
    rowsEl.scrollTop = 0;
    drawRows();
  }
  function shown() { return filtered || rows; }

  var pool = [];
  function drawRows() {
    var list = shown();
    var top = Math.max(0, Math.floor(rowsEl.scrollTop / ROW) - 10);
    var end = Math.min(list.length, top + Math.ceil(rowsEl.clientHeight / ROW) + 20);
    pool.forEach(function (el) { el.remove(); });
    pool = [];
    for (var r = top; r < end; r++) {
      var i = list[r], el = document.createElement("div");
      el.className = "row k-" + K[i] + (onPath[i] ? " on" : "") + (i === cur ? " cur" : "");
      el.style.top = (r * ROW) + "px";
      el.dataset.i = i;
      var g = document.createElement("span");
      g.className = "g";
      g.textContent = filtered ? "" : prefixes[r];
      var dot = document.createElement("span");
      dot.className = "dot";
      dot.textContent = i === leaf ? "\u25c9" : onPath[i] ? "\u2022" : "";
      el.append(g, dot);
      if (label.has(i)) {
        var lb = document.createElement("span");
        lb.className = "lb";
        lb.textContent = "[" + label.get(i) + "]";
        el.append(lb);
      }
      var pv = document.createElement("span");
      pv.className = "pv";
      pv.textContent = PV[i];
      el.append(pv);
      el.title = D.ids[i];
      rowsEl.append(el);
      pool.push(el);
    }
  }
  var pending = false;
  rowsEl.addEventListener("scroll", function () {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; drawRows(); });
  });
  window.addEventListener("resize", drawRows);
  rowsEl.addEventListener("click", function (e) {
    var el = e.target.closest(".row");
    if (el) select(+el.dataset.i, true);
  });
  var timer = 0;
  q.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(applyFilter, 120); });
  only.addEventListener("change", applyFilter);

  function revealRow(i) {
    var list = shown(), r = list.indexOf(i);
    if (r < 0) return;
    var y = r * ROW;
    if (y < rowsEl.scrollTop || y > rowsEl.scrollTop + rowsEl.clientHeight - ROW) rowsEl.scrollTop = Math.max(0, y - rowsEl.clientHeight / 3);
  }

  // ---- the conversation pane ------------------------------------------------------
  function makeArticle(i) {
    var el = document.createElement("article");
    el.id = D.ids[i];
    el.className = "k-" + K[i];
    var h = $("pi-h" + i);
    el.innerHTML = h ? h.textContent : "";
    articles.set(i, el);
    return el;
  }

  var io = new IntersectionObserver(function (es) {
    es.forEach(function (e) { if (e.isIntersecting) fillGroup(e.target.piGroup); });
  }, { root: main, rootMargin: "1500px 0px" });

  function fillGroup(grp) {
    if (!grp || grp.done) return;
    grp.done = true;
    io.unobserve(grp.el);
    var els = grp.items.map(makeArticle);
    grp.el.replaceWith.apply(grp.el, els);
  }

  function newGroup() {
    var el = document.createElement("div");
    el.className = "lazy";
    var grp = { el: el, items: [], done: false };
    el.piGroup = grp;
    return grp;
  }

  function describe(grp) {
    var msgs = 0;
    grp.items.forEach(function (i) { if (K[i] === "a" || K[i] === "A") msgs++; });
    grp.el.textContent = grp.items.length + " more entr" + (grp.items.length === 1 ? "y" : "ies") + " (" + msgs + " assistant message" + (msgs === 1 ? "" : "s") + ") \u2014 shown as you scroll";
    grp.el.style.minHeight = Math.min(grp.items.length * 90, 4000) + "px";
  }

  function renderConv() {
    io.disconnect();
    articles.clear(); groupOf.clear();
    conv.textContent = "";
    var frag = document.createDocumentFragment(), grp = null, groups = [];
    for (var p = 0; p < path.length; p++) {
      var i = path[p];
      if (SH[i] !== i) continue;
      if (EAGER.indexOf(K[i]) >= 0) { grp = null; frag.append(makeArticle(i)); continue; }
      if (!grp || grp.items.length >= GROUP) { grp = newGroup(); groups.push(grp); frag.append(grp.el); }
      grp.items.push(i);
      groupOf.set(i, grp);
    }
    groups.forEach(describe);
    conv.append(frag);
    groups.forEach(function (g) { io.observe(g.el); });
    conv.dataset.leaf = leaf >= 0 ? D.ids[leaf] : "";
    var branches = 0;
    for (var b = 0; b < n; b++) if (start[b + 1] - start[b] > 1) branches += start[b + 1] - start[b] - 1;
    branchEl.textContent = (leaf === D.leaf ? "The session's current branch" : "Another branch") +
      ": " + path.length + " entries to #" + (leaf >= 0 ? D.ids[leaf] : "") +
      " \u00b7 " + branches + " other branch" + (branches === 1 ? "" : "es") + " in the tree";
  }

  function setLeaf(l) {
    if (l === leaf) return false;
    path.forEach(function (i) { onPath[i] = 0; });
    leaf = l;
    path = l >= 0 ? pathTo(l) : [];
    path.forEach(function (i) { onPath[i] = 1; });
    layout();
    timings.tree = Math.round(performance.now() - T0);
    applyFilter();
    renderConv();
    return true;
  }

  function reveal(i) {
    var a = SH[i] >= 0 ? SH[i] : i;
    fillGroup(groupOf.get(a));
    var el = articles.get(a);
    if (!el) return;
    var target = el;
    if (a !== i) {
      var t = el.querySelector('[data-r="' + CSS.escape(D.ids[i]) + '"]');
      if (t) { t.classList.add("open"); target = t; }
    }
    target.scrollIntoView({ block: "start" });
    el.classList.add("flash");
    setTimeout(function () { el.classList.remove("flash"); }, 1600);
  }

  function select(i, fromTree) {
    if (!(i >= 0 && i < n)) return;
    if (!onPath[i]) setLeaf(last[i]);
    cur = i;
    reveal(i);
    if (!fromTree) revealRow(i);
    drawRows();
    try { history.replaceState(null, "", "#" + encodeURIComponent(D.ids[i])); } catch (e) { /* file: URLs may refuse */ }
  }

  function fromHash() {
    var h = location.hash.slice(1);
    if (!h) return -1;
    var id = h;
    try { id = decodeURIComponent(h); } catch (e) { /* keep it as written */ }
    var i = byId.get(id);
    return i === undefined ? -1 : i;
  }

  conv.addEventListener("click", function (e) {
    var a = e.target.closest("a.id");
    if (a) {
      e.preventDefault();
      var i = byId.get(a.getAttribute("href").slice(1));
      if (i !== undefined) select(i, false);
      return;
    }
    var call = e.target.closest(".call");
    if (call && call.parentElement.classList.contains("tool") && !e.target.closest("a")) {
      call.parentElement.classList.toggle("open");
      return;
    }
    var lazy = e.target.closest(".lazy");
    if (lazy) fillGroup(lazy.piGroup);
  });
  window.addEventListener("hashchange", function () { var i = fromHash(); if (i >= 0 && i !== cur) select(i, false); });

  timings.index = Math.round(performance.now() - T0);
  var first = fromHash();
  setLeaf(first >= 0 ? last[first] : D.leaf);
  if (first >= 0) select(first, false);
  timings.shown = Math.round(performance.now() - T0);
  // For checks in a browser: what the first view cost (ms since the script started).
  window.piTimings = timings;
  document.body.dataset.ready = "1";
})();
