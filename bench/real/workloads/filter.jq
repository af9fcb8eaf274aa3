# Deterministic jq workload for the crash harness: selection, grouping, regexes (oniguruma),
# string building and reduction over data.json.
[ .[]
  | select(.age > 25 and (.email | test("^[a-z]+[0-9]*@ex(ample)?\\.(com|org)$")))
  | {name, city, tags: (.tags | map(ascii_upcase) | join("+")), score: (.scores | add / length)} ]
| group_by(.city)
| map({city: .[0].city, n: length, best: (max_by(.score) | .name),
       tags: ([.[].tags | split("+")[]] | unique | join(","))})
| (reduce .[] as $c ({}; .[$c.city] = $c.n)) as $counts
| {cities: ., counts: $counts, names: ([.[].best] | map(sub("(?<a>[a-z])(?<b>[0-9]+)"; "\(.b)-\(.a)")))}
