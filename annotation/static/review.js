// The review and adjudication pages: keyboard shortcuts, events loaded in pages as the reader scrolls, links to
// events not loaded yet, search within the whole run, and renewing the lease while the page is open.
// Written here (no library): the server renders every fragment, so this only fetches and inserts them.
(function () {
  "use strict";
  const form = document.getElementById("label-form") || document.getElementById("checklist-form") ||
    document.getElementById("adjudicate-form");
  const list = document.getElementById("events");
  const found = document.getElementById("found");
  const find = document.getElementById("find");

  document.addEventListener("keydown", function (event) {
    const el = document.activeElement;
    const typing = /^(TEXTAREA|SELECT)$/.test(el.tagName) || (el.tagName === "INPUT" && !/^(radio|checkbox)$/.test(el.type));
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && form) {
      event.preventDefault(); form.requestSubmit(); return;
    }
    if (typing) return;
    if (event.key === "/" && find) { event.preventDefault(); find.focus(); return; }
    if (event.key === "e" && document.getElementById("evidence")) {
      event.preventDefault(); document.getElementById("evidence").focus(); return;
    }
    if (form && /^[1-9]$/.test(event.key)) {
      const radio = form.querySelector('input[name="label"][data-key="' + event.key + '"]');
      if (radio) { radio.checked = true; radio.focus(); }
    }
  });

  // --- paging: the sentinel <li class="more"> fetches the next page when it scrolls into view
  let loading = null;
  function loadInto(sentinel, url) {
    if (loading) return loading;
    loading = fetch(url, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.text(); })
      .then(function (html) {
        sentinel.insertAdjacentHTML("afterend", html); sentinel.remove(); observe();
      })
      .catch(function (err) { sentinel.textContent = "Could not load more events (" + err.message + ")."; })
      .finally(function () { loading = null; });
    return loading;
  }
  const watcher = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) { if (entry.isIntersecting) loadInto(entry.target, entry.target.dataset.next); });
  }, { rootMargin: "800px" }) : null;
  function observe() {
    const sentinel = list && list.querySelector("li.more");
    if (sentinel && watcher) watcher.observe(sentinel);
  }
  observe();

  // --- a link to an event not loaded yet loads everything up to it
  function reach() {
    const m = /^#e(\d+)$/.exec(location.hash);
    if (!m || document.getElementById("e" + m[1]) || !list) return;
    const sentinel = list.querySelector("li.more");
    if (!sentinel) return;
    const url = list.dataset.base + "/events?after=" + sentinel.dataset.after + "&until=" + m[1];
    loadInto(sentinel, url).then(function () {
      const target = document.getElementById("e" + m[1]);
      if (target) target.scrollIntoView();
    });
  }
  window.addEventListener("hashchange", reach);
  reach();

  // --- search: filter what is loaded; when more is not loaded, ask the server for every match in the run
  let timer = null;
  if (find) find.addEventListener("input", function () {
    const needle = find.value.trim().toLowerCase();
    list.querySelectorAll("li.event").forEach(function (li) {
      li.classList.toggle("hidden", needle !== "" && !li.dataset.text.includes(needle));
    });
    clearTimeout(timer);
    if (!needle || !list.querySelector("li.more")) { found.hidden = true; found.innerHTML = ""; return; }
    timer = setTimeout(function () {
      fetch(find.dataset.url + "?find=" + encodeURIComponent(needle), { credentials: "same-origin" })
        .then(function (r) { return r.text(); })
        .then(function (html) { found.innerHTML = html; found.hidden = false; });
    }, 250);
  });

  const renew = document.getElementById("renew-form");
  const lease = document.getElementById("lease");
  if (renew && lease) setInterval(function () {
    fetch(renew.action, { method: "POST", body: new FormData(renew), credentials: "same-origin" })
      .then(function (r) { return r.json().then(function (body) { return [r.ok, body]; }); })
      .then(function (pair) {
        if (pair[0]) { lease.textContent = "lease until " + pair[1].lease_expires_at.slice(11, 16) + " UTC"; }
        else { lease.textContent = pair[1].detail; lease.className = "error"; }
      });
  }, 60000);
})();
