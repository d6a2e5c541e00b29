// missionboard web: the page's one script. It pairs this device (the code comes
// from the link's fragment, which no request carries), keeps the live part current
// from the event stream without losing what is being typed, posts the forms, and
// shows how long each ask has waited. No framework, nothing from another origin.
(function () {
  "use strict";

  var kind = document.body.getAttribute("data-page");
  var csrfMeta = document.querySelector('meta[name="csrf"]');

  function say(el, text, bad) {
    if (!el) return;
    el.textContent = text;
    el.classList.toggle("bad", !!bad);
  }

  function post(url, fields) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString()
    }).then(function (r) {
      return r.json().then(
        function (j) { return { ok: r.ok, status: r.status, body: j }; },
        function () { return { ok: r.ok, status: r.status, body: {} }; }
      );
    });
  }

  function pair() {
    var status = document.getElementById("pair-status");
    var code = location.hash.slice(1);
    // The code leaves the address bar (and history) before anything else happens.
    history.replaceState(null, "", location.pathname);
    if (!code) {
      say(status, "This link has no pairing code. Run 'missionboard web pair' for a new one.", true);
      return;
    }
    post("/api/pair", { code: code }).then(function (r) {
      if (r.ok) {
        location.replace("/");
      } else {
        say(status, r.body.error || "Pairing failed.", true);
      }
    }, function () {
      say(status, "The server could not be reached.", true);
    });
  }

  function ago(ms) {
    var s = Math.max(0, Math.floor((Date.now() - ms) / 1000));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m";
    if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
    return Math.floor(s / 86400) + "d";
  }

  function ages() {
    document.querySelectorAll("time[data-since]").forEach(function (t) {
      var since = Number(t.getAttribute("data-since"));
      if (since) t.textContent = "waiting " + ago(since);
    });
  }

  function submit(ev) {
    ev.preventDefault();
    var form = ev.target;
    var button = ev.submitter;
    var confirmText = button && button.getAttribute("data-confirm");
    if (confirmText && !window.confirm(confirmText)) return;
    var fields = new FormData(form);
    if (button && button.name) fields.set(button.name, button.value);
    if (csrfMeta) fields.set("csrf", csrfMeta.getAttribute("content"));
    var result = form.querySelector(".result");
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    post(form.getAttribute("action"), fields).then(function (r) {
      say(result, r.body.message || r.body.error || ("HTTP " + r.status), !r.ok);
      // A template's form stays usable: it may be fired again with other values.
      if (!r.ok || form.classList.contains("template")) {
        form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
      }
    }, function () {
      say(result, "The server could not be reached; nothing was sent.", true);
      form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
    });
  }

  function wire(root) {
    root.querySelectorAll("form[data-api]").forEach(function (f) {
      if (f.getAttribute("data-wired")) return;
      f.setAttribute("data-wired", "1");
      f.addEventListener("submit", submit);
    });
  }

  // Bring the live part up to `html`: asks that were answered go, new ones come in
  // their place, and a card still pending keeps whatever is typed into it.
  function merge(html) {
    var live = document.getElementById("live");
    if (!live) return;
    var doc = new DOMParser().parseFromString("<main>" + html + "</main>", "text/html");
    var fresh = doc.body.firstElementChild;
    var list = document.getElementById("ask-list");
    var freshList = fresh.querySelector("#ask-list");
    if (list && freshList) {
      var kept = {};
      list.querySelectorAll("li[data-ask]").forEach(function (li) {
        kept[li.getAttribute("data-ask")] = li;
      });
      var items = [];
      freshList.querySelectorAll("li[data-ask]").forEach(function (li) {
        var id = li.getAttribute("data-ask");
        items.push(kept[id] || document.importNode(li, true));
      });
      list.replaceChildren.apply(list, items);
      var asks = document.getElementById("asks");
      var freshAsks = fresh.querySelector("#asks");
      asks.querySelectorAll(":scope > :not(#ask-list)").forEach(function (n) { n.remove(); });
      freshAsks.querySelectorAll(":scope > :not(#ask-list)").forEach(function (n) {
        asks.insertBefore(document.importNode(n, true), list);
      });
    }
    var missions = document.getElementById("missions");
    var freshMissions = fresh.querySelector("#missions");
    if (missions && freshMissions) {
      missions.replaceWith(document.importNode(freshMissions, true));
    }
    wire(live);
    ages();
  }

  function follow() {
    var conn = document.getElementById("conn");
    var events = new EventSource("/events");
    events.addEventListener("state", function (e) {
      merge(e.data);
      say(conn, "live");
    });
    events.addEventListener("error", function () {
      if (events.readyState === EventSource.CLOSED) {
        say(conn, "disconnected — this device may have been revoked; reload to see", true);
      } else {
        say(conn, "reconnecting…", true);
      }
    });
  }

  if (kind === "pair") {
    pair();
    return;
  }
  wire(document);
  ages();
  setInterval(ages, 15000);
  if (kind === "main") follow();
})();
