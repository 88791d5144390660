// bpftop's flame graph: hover details, click to zoom, regex search.
// Written for bpftop; inlined into every SVG it exports (tui/formats/svgflame.py).
(function () {
  "use strict";
  var svg = document.documentElement;
  var width = svg.viewBox.baseVal.width;
  var total = Number(svg.getAttribute("data-total")) || 1;
  var frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
  var details = document.getElementById("details");
  var reset = document.getElementById("reset");
  var matched = document.getElementById("matched");
  var CHAR_PX = 7.2;

  function num(g, name) { return Number(g.getAttribute("data-" + name)); }

  function fit(g, x, w) {
    var rect = g.querySelector("rect");
    var text = g.querySelector("text");
    rect.setAttribute("x", x.toFixed(2));
    rect.setAttribute("width", Math.max(0, w).toFixed(2));
    text.setAttribute("x", (x + 3).toFixed(2));
    var name = g.getAttribute("data-n");
    var room = Math.floor((w - 6) / CHAR_PX);
    text.textContent = room < 3 ? "" : name.length <= room ? name : name.slice(0, room - 2) + "..";
  }

  function zoom(target) {
    var x0 = num(target, "x"), w0 = num(target, "w"), d0 = num(target, "d");
    var scale = width / w0;
    frames.forEach(function (g) {
      var x = num(g, "x"), w = num(g, "w"), d = num(g, "d");
      var inside = x >= x0 && x + w <= x0 + w0 && d >= d0;
      var above = d < d0 && x <= x0 && x + w >= x0 + w0;
      g.style.display = inside || above ? "" : "none";
      if (inside) { fit(g, (x - x0) * scale, w * scale); }
      else if (above) { fit(g, 0, width); }
    });
    svg.setAttribute("data-zoom", target.getAttribute("data-n"));
    reset.style.display = d0 > 0 ? "" : "none";
  }

  function search(pattern) {
    var re = null;
    if (pattern) {
      try { re = new RegExp(pattern); } catch (e) { matched.textContent = "bad regex"; return 0; }
    }
    var spans = [];
    frames.forEach(function (g) {
      var hit = re !== null && re.test(g.getAttribute("data-n"));
      g.classList.toggle("hit", hit);
      if (hit) { spans.push([num(g, "x"), num(g, "x") + num(g, "w")]); }
    });
    // Samples under any match, each counted once (matches nest).
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -1;
    spans.forEach(function (s) {
      if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
    });
    matched.textContent = re === null ? "" : "matched " + (100 * covered / total).toFixed(1) + "%";
    svg.setAttribute("data-matched", String(covered));
    return covered;
  }

  frames.forEach(function (g) {
    fit(g, Number(g.querySelector("rect").getAttribute("x")), num(g, "w") * width / total);
    g.addEventListener("click", function () { zoom(g); });
    g.addEventListener("mouseover", function () {
      details.textContent = g.getAttribute("data-t");
    });
    g.addEventListener("mouseout", function () { details.textContent = " "; });
  });
  reset.addEventListener("click", function () { zoom(frames[0]); });
  document.getElementById("search").addEventListener("click", function () {
    var pattern = window.prompt("Search frames (regex); empty clears", "");
    if (pattern !== null) { search(pattern); }
  });
  window.bpftopFlame = { zoom: zoom, search: search, frames: frames };
})();
