# mvpctl runtime library (mvp.k8s.io/v1 TransformationRules).
#
# A conversion runs on a wrapper {o, d, w, all}: o is the object, d the
# round-trip data this rule left on the object in the other direction (read
# and dropped), w the data this direction leaves for the way back, all the
# conversion data of other rules. Paths are arrays of keys (strings),
# indexes (numbers) and wildcards (null). A maybe-value is [] (absent) or
# [value].

def mvp_annotation: "mvp.k8s.io/conversion-data";

# mvp_expand($p): every concrete path matching pattern $p whose value exists.
def mvp_expand($p):
  def go($pre; $n):
    if $n == ($p | length) then $pre
    else getpath($pre) as $v | $p[$n] as $s
      | if $s == null then
          if ($v | type) == "array" then range(0; $v | length) as $i | go($pre + [$i]; $n + 1)
          elif ($v | type) == "object" then ($v | keys[]) as $k | go($pre + [$k]; $n + 1)
          else empty end
        elif ($s | type) == "number" then
          if ($v | type) == "array" and $s < ($v | length) then go($pre + [$s]; $n + 1) else empty end
        elif ($v | type) == "object" and ($v | has($s)) then go($pre + [$s]; $n + 1)
        else empty end
    end;
  go([]; 0);

# mvp_candidates($p): where a step may read or write: for a pattern ending
# in a key, that key under every matching object parent (present or not).
def mvp_candidates($p):
  if ($p | length) > 0 and ($p[-1] | type) == "string" then
    . as $o | mvp_expand($p[:-1]) | select(. as $q | $o | getpath($q) | type == "object") | . + [$p[-1]]
  else mvp_expand($p) end;

# mvp_get($q): the maybe-value at concrete path $q.
def mvp_get($q):
  reduce $q[] as $e ({v: ., ok: true};
    if .ok | not then .
    elif ($e | type) == "number" then
      if (.v | type) == "array" and $e < (.v | length) then .v = .v[$e] else .ok = false end
    elif (.v | type) == "object" and (.v | has($e)) then .v = .v[$e]
    else .ok = false end)
  | if .ok then [.v] else [] end;

# mvp_put($q; $m): write maybe-value $m at $q (absent deletes).
def mvp_put($q; $m): if $m == [] then delpaths([$q]) else setpath($q; $m[0]) end;

# mvp_pathstr: a concrete path in the path language, the key of round-trip data.
def mvp_pathstr:
  reduce .[] as $e ("";
    if ($e | type) == "number" then . + "[\($e)]"
    elif ($e | test("^[^.\\[\\]\"' \t\\\\]+$")) then (if . == "" then $e else . + "." + $e end)
    else . + "[\"" + ($e | gsub("(?<c>[\\\\\"])"; "\\\(.c)")) + "\"]" end);

# mvp_one(f): f must give exactly one result.
def mvp_one(f): [f] | if length == 1 then .[0] else error("expression gave \(length) results, want 1") end;

# mvp_when(f): the condition f on the whole object.
def mvp_when(f): [.o | f][0] // false;

# mvp_fail($step; $path): tag an error with the step and concrete path.
def mvp_fail($step; $path):
  if type == "object" and has("mvp_error") then error(.) else error({mvp_error: ., step: $step, path: $path}) end;

# mvp_convert($t): convert a value to type $t (convertType and type hints).
def mvp_convert($t):
  def int_string: type == "string" and test("^-?[0-9]+$");
  if $t == "string" then
    if type == "string" then . elif type == "number" or type == "boolean" then tojson
    else error("cannot convert \(type) \(tojson) to string") end
  elif $t == "integer" then
    if type == "number" and . == floor then . elif int_string then tonumber
    else error("cannot convert \(type) \(tojson) to integer") end
  elif $t == "number" then
    if type == "number" then . elif type == "string" and test("^-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?$") then tonumber
    else error("cannot convert \(type) \(tojson) to number") end
  elif $t == "boolean" then
    if type == "boolean" then . elif . == "true" then true elif . == "false" then false
    else error("cannot convert \(type) \(tojson) to boolean") end
  elif $t == "int-or-string" then
    if type == "number" and . == floor then . elif int_string then tonumber elif type == "string" then .
    else error("cannot convert \(type) \(tojson) to int-or-string") end
  else error("unknown type \($t)") end;

# mvp_step($i; $p; f; r): the maybe-value at each candidate path of $p
# becomes its image under f. Where r cannot give the old value back, the old
# value is kept in round-trip data; data left by the other direction is used
# when r of it gives the current value, i.e. the field was not changed since.
def mvp_step($i; $p; f; r):
  .d[$i] as $d
  | reduce (.o | mvp_candidates($p)) as $q (.;
      ($q | mvp_pathstr) as $k
      | (.o | mvp_get($q)) as $x
      | $d[$k] as $s
      | (try (if $s != null and ($s | r) == $x then $s else ($x | f) end) catch mvp_fail($i; $k)) as $y
      | (if (try ($y | r) catch mvp_fail($i; $k)) != $x then .w[$i][$k] = $x else . end)
      | .o |= mvp_put($q; $y));

# mvp_diff($a; $b): the changes that turn $a into $b, as [path, value]
# (set) and [path] (delete) entries, objects compared member by member and
# anything else replaced whole. Unlike a merge patch it can say "null".
def mvp_diff($a; $b):
  def go($p; $a; $b):
    if ($a | type) == "object" and ($b | type) == "object" then
      ((($a | keys) + ($b | keys)) | unique[]) as $k
      | if ($b | has($k) | not) then [$p + [$k]]
        elif ($a | has($k) | not) then [$p + [$k], $b[$k]]
        elif $a[$k] == $b[$k] then empty
        else go($p + [$k]; $a[$k]; $b[$k]) end
    elif $a == $b then empty
    else [$p, $b] end;
  [go([]; $a; $b)];

# mvp_patch($d): apply the changes of mvp_diff.
def mvp_patch($d):
  reduce $d[] as $e (.; if ($e | length) == 1 then delpaths([$e[0]]) else setpath($e[0]; $e[1]) end);

# mvp_object($i; f; r): a jq step on the whole object. Where r cannot give
# the object back, the changes from r's result to the object (mvp_diff) are
# kept in round-trip data; the other direction applies them to its result
# and keeps the patched object when r of it gives the current object back.
def mvp_object($i; f; r):
  .d[$i][""] as $s
  | .o as $x
  | (try (
      ($x | mvp_one(f)) as $fx
      | if $s == null then $fx
        else ($fx | mvp_patch($s)) as $cand
          | if ($cand | mvp_one(r)) == $x then $cand else $fx end
        end
    ) catch mvp_fail($i; "")) as $y
  | (try ($y | mvp_one(r)) catch mvp_fail($i; "")) as $back
  | (if $back != $x then .w[$i][""] = mvp_diff($back; $x) else . end)
  | .o = $y;

# mvp_bind($to; $from; $q): the target pattern with its wildcards replaced,
# in order, by what the wildcards of $from matched in $q.
def mvp_bind($to; $from; $q):
  [range(0; $from | length) | select($from[.] == null) | $q[.]] as $vals
  | reduce $to[] as $s ({out: [], n: 0};
      if $s == null then .out += [$vals[.n]] | .n += 1 else .out += [$s] end)
  | .out;

# mvp_common($q; $t): the length of the common prefix of $q and $t.
def mvp_common($q; $t):
  ([$q, $t] | map(length) | min) as $m
  | [range(0; $m) | select($q[.] != $t[.])] | first // $m;

# mvp_empty: null, or an object or array that holds nothing but such values
# (what moves leave behind: empty parents, and nulls where setpath grew an
# array).
def mvp_empty: . == null or ((type == "object" or type == "array") and all(.[]; mvp_empty));

# mvp_prune($q; $t): after moving $q to $t, drop objects that the move left
# empty, up to the deepest common parent of $q and $t.
def mvp_prune($q; $t):
  mvp_common($q; $t) as $common
  | reduce range(($q | length) - 1; $common; -1) as $n (.;
      if ($q[$n - 1] | type) == "string" and getpath($q[:$n]) == {} then delpaths([$q[:$n]]) else . end);

# mvp_article: a type name with its article.
def mvp_article: (if . == "object" or . == "array" then "an " else "a " end) + .;

# mvp_blocked($q; $from): why nothing can be written at $q: its first
# parent, from position $from on, that holds something other than null or
# the object or array the next step of $q needs; null if there is none.
def mvp_blocked($q; $from):
  . as $o
  | first(range([$from, 1] | max; $q | length) as $n
      | (if ($q[$n] | type) == "string" then "object" else "array" end) as $want
      | ($o | mvp_get($q[:$n])) as $v
      | select($v != [] and $v[0] != null and ($v[0] | type) != $want)
      | "\($q[:$n] | mvp_pathstr) is \($v[0] | type | mvp_article), not \($want | mvp_article)"
    ) // null;

# mvp_move($i; $from; $to): rename/move every match of $from to $to. A value
# already at the target is kept in round-trip data; data left at the source
# by the other direction is put back.
#
# Parents of the target: the move back prunes the objects it leaves empty.
# Where that would not give back what was there (an empty parent that
# existed before, or a parent the move created that the move back cannot
# prune, such as an array), the topmost such parent member is kept in
# round-trip data; the other direction puts it back after its prune, as
# long as nothing but empty objects, arrays and nulls is there.
def mvp_move($i; $from; $to):
  .d[$i] as $d
  | reduce (.o | mvp_expand($from)) as $q (.;
      mvp_bind($to; $from; $q) as $t | ($q | mvp_pathstr) as $k
      | mvp_common($q; $t) as $c
      | (.o | mvp_get($t)) as $prev
      | (if $prev != [] then .w[$i][$t | mvp_pathstr] = $prev else . end)
      | (.o | mvp_blocked($t; 1)) as $why
      | (if $why != null then $why | mvp_fail($i; $t | mvp_pathstr) else . end)
      | .o as $before
      | (.o | getpath($q)) as $v
      | .o |= (setpath($t; $v) | delpaths([$q]) | mvp_prune($q; $t))
      | (.o | delpaths([$t]) | mvp_prune($t; $q) | mvp_put($t; $prev)) as $back
      | ([range($c + 1; $t | length) | $t[:.] as $p
          | select(($p[-1] | type) == "string"
              and (($before | mvp_get($p)) == []) != (($back | mvp_get($p)) == []))
          | $p] | first) as $p
      | (if $p != null then .w[$i][$p | mvp_pathstr] = ($before | mvp_get($p)) else . end)
      | reduce range($c + 1; $q | length) as $n (.;
          ($q[:$n] | mvp_pathstr) as $pk
          | if $d[$pk] != null and ((.o | mvp_get($q[:$n])) | . == [] or (.[0] | mvp_empty))
            then .o |= mvp_put($q[:$n]; $d[$pk]) else . end)
      | if $d[$k] != null then .o |= mvp_put($q; $d[$k]) else . end);

# mvp_tail($p): the length of pattern $p up to its last wildcard or index.
# The keys after it name the objects a set step may create; list items are
# never created.
def mvp_tail($p): [range(0; $p | length) | select($p[.] | type != "string") | . + 1] | max // 0;

# mvp_sites($p): where a set step reads and writes: the keys after the last
# wildcard or index of $p under every match of what comes before, present
# or not, except under a null list item.
def mvp_sites($p):
  mvp_tail($p) as $b | . as $o
  | mvp_expand($p[:$b]) | select(. as $m | $b == 0 or ($o | getpath($m)) != null) | . + $p[$b:];

# mvp_set($i; $p; f; r): mvp_step for set, whose paths may lead through
# missing objects. Writing a value creates the missing objects after the
# last wildcard or index of $p; a parent that holds anything else but null
# is an error. Where r writes the field from nothing (the other direction
# sets it), removing the field also removes the objects that leaves empty,
# and an empty or null parent that was there is put back from round-trip
# data, which the direction where f writes from nothing keeps for it.
def mvp_set($i; $p; f; r):
  mvp_tail($p) as $b
  | (([] | f) != []) as $fmake
  | (([] | r) != []) as $rmake
  | .d[$i] as $d
  | reduce (.o | mvp_sites($p)) as $q (.;
      ($q | mvp_pathstr) as $k
      | (.o | mvp_get($q)) as $x
      | $d[$k] as $s
      | (if $s != null and ($s | r) == $x then $s else ($x | f) end) as $y
      | (if ($y | r) != $x then .w[$i][$k] = $x else . end)
      | if $y != [] then
          (.o | mvp_blocked($q; $b)) as $why
          | (if $why != null then $why | mvp_fail($i; $k) else . end)
          | .o as $before
          | .o |= setpath($q; $y[0])
          | if $x == [] and $fmake then
              (.o | delpaths([$q]) | mvp_prune($q; $q[:$b])) as $back
              | (first(range($b + 1; $q | length) | $q[:.]
                  | select(. as $pp | (($before | mvp_get($pp)) == []) != (($back | mvp_get($pp)) == []))) // null) as $pp
              | if $pp != null then .w[$i][$pp | mvp_pathstr] = ($before | mvp_get($pp)) else . end
            else . end
        elif $x != [] then
          .o |= delpaths([$q])
          | if $rmake then
              .o |= mvp_prune($q; $q[:$b])
              | reduce range($b + 1; $q | length) as $n (.;
                  $d[($q[:$n] | mvp_pathstr)] as $e
                  | if $e != null and ($e | length) == 1 and ($e[0] | mvp_empty) and (.o | mvp_get($q[:$n])) == []
                    then .o |= setpath($q[:$n]; $e[0]) else . end)
            else . end
        else . end);

# mvp_begin($rule): split the object from this rule's round-trip data.
def mvp_begin($rule):
  if type != "object" then error("not an object") else . end
  | (if (.metadata | type) == "object" and (.metadata.annotations | type) == "object" then .metadata.annotations[mvp_annotation] else null end) as $raw
  | (if $raw == null then {} else (try ($raw | fromjson) catch null) end) as $all
  | if ($all | type) != "object" then error("annotation \(mvp_annotation) is not valid conversion data") else . end
  | ($all["$created"] // []) as $created
  | {o: (if $raw == null then . else del(.metadata.annotations[mvp_annotation])
         | if ($created | index("annotations")) and .metadata.annotations == {} then del(.metadata.annotations) else . end
         | if ($created | index("metadata")) and .metadata == {} then del(.metadata) else . end
         end),
     d: ($all[$rule] // {}), w: {}, all: ($all | del(.[$rule], .["$created"]))};

# mvp_end($rule; $apiVersion; $limit): put round-trip data back on the object
# and set its apiVersion.
def mvp_end($rule; $apiVersion; $limit):
  (.all + (if .w == {} then {} else {($rule): .w} end)) as $data
  | .o
  | if $data == {} then .
    else
      (if .metadata == null then ["metadata", "annotations"] elif .metadata.annotations == null then ["annotations"] else [] end) as $c
      | ($data + (if $c == [] then {} else {"$created": $c} end) | tojson) as $json
      | if ($json | utf8bytelength) > $limit then error("conversion data needs \($json | utf8bytelength) bytes, more than the limit of \($limit)") else . end
      | .metadata.annotations[mvp_annotation] = $json
    end
  | .apiVersion = $apiVersion;
