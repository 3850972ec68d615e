# The shared cache in front of the API: Varnish with the xkey module (Debian: varnish,
# varnish-modules). It keeps anonymous GET answers as long as the API's s-maxage says
# (long, when the API purges: PURGE_URLS) and drops them by tag the moment the API
# purges one: every answer names what it read in Surrogate-Key (products, groups,
# comments, the leaderboard, membership; `all` when it read more than the tag bound),
# and the API purges the tags of each change of the table, once per change across its
# processes (docs/http.md, "Purging").
#
# Two listeners: the shoppers' one, and `purge`, which takes PURGE requests only and must
# be reachable from the API's processes alone (never through the load balancer in front:
# every client would then reach it from the balancer's address).
#
#   varnishd -a :6081 -a purge=:6091 -f /etc/varnish/default.vcl -s malloc,1G
vcl 4.1;

import directors;
import std;
import xkey;

# Who may purge, besides being on the purge listener: the API's private networks.
acl purgers {
    "127.0.0.1";
    "::1";
    "10.0.0.0"/8;
    "172.16.0.0"/12;
    "192.168.0.0"/16;
    "fd00::"/8;
}

sub vcl_init {
    new api = directors.round_robin();
}

# backends:begin (one per API process or load-balanced address; tests write their own)
backend api_1 {
    .host = "api";
    .port = "8000";
    .connect_timeout = 2s;
    .first_byte_timeout = 30s;
    .probe = {
        .url = "/readyz";
        .interval = 2s;
        .timeout = 1s;
        .window = 3;
        .threshold = 2;
    }
}

sub vcl_init {
    api.add_backend(api_1);
}
# backends:end

sub vcl_recv {
    if (local.socket == "purge") {
        if (req.method != "PURGE") {
            return (synth(405, "This listener takes PURGE only"));
        }
        if (client.ip !~ purgers) {
            return (synth(403, "Forbidden"));
        }
        if (req.http.xkey-purge-all) {
            # Changes went by that no list of tags covers (a gap in the stream, a
            # reader taken over): every object goes.
            if (std.ban("obj.status != 0")) {
                return (synth(200, "Banned everything"));
            }
            return (synth(500, "Ban refused: " + std.ban_error()));
        }
        if (!req.http.xkey-purge) {
            return (synth(400, "Name the tags to purge in xkey-purge"));
        }
        set req.http.n-gone = xkey.purge(req.http.xkey-purge);
        return (synth(200, "Purged " + req.http.n-gone));
    }
    if (req.method == "PURGE") {
        return (synth(405, "Not allowed"));
    }
    set req.backend_hint = api.backend();
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    # The API reads tokens from Authorization, never cookies: a shop's cookies sent along
    # would make every answer a miss (the built-in rules pass requests with cookies).
    # Requests with Authorization are passed by the built-in rules, and the API marks
    # their answers private anyway.
    unset req.http.Cookie;
}

sub vcl_backend_response {
    # xkey reads the tags from `xkey`; the API writes them in Surrogate-Key (Fastly's
    # name), and Cache-Tag (Cloudflare's) holds the same.
    if (beresp.http.Surrogate-Key) {
        set beresp.http.xkey = beresp.http.Surrogate-Key;
    }
    # The time to live comes from the API's Cache-Control: s-maxage for this cache (long
    # when the API purges), max-age for browsers; private and no-store answers are not
    # kept (the built-in rules, which follow).
}

sub vcl_deliver {
    # Tags are for this cache: what an answer read is no business of the browser's.
    unset resp.http.xkey;
    unset resp.http.Surrogate-Key;
    unset resp.http.Cache-Tag;
    # Kept here until purged, an answer is as fresh as the last purge, not as old as its
    # time in this cache: browsers get the API's whole max-age (without Age they count
    # it from now), the bound the docs give shoppers.
    unset resp.http.Age;
    if (obj.hits > 0) {
        set resp.http.X-Cache = "HIT";
    } else {
        set resp.http.X-Cache = "MISS";
    }
}
