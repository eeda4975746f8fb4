{#- Matching rows on their key columns: the one place every capability builds its join condition. -#}

{% macro _key_match(keys, left, right, right_keys=none, null_safe=true, equal_columns=[]) %}
    {#- `left`.k1 <=> `right`.k1 and ...: null-safe by default, so a NULL key part behaves like a
        value (matched, not duplicated). `right_keys`: the right side's columns, pairwise, when they
        are named otherwise (a foreign key). `null_safe=false`, or a column in `equal_columns`,
        compares with `=`: a NULL then matches nothing (a foreign key), and Spark can prune
        partitions on the key (a partition column never holds NULL in a joinery_upsert table). -#}
    {% set others = right_keys if right_keys is not none else keys %}
    {% set equal = equal_columns | map('lower') | list %}
    {% set terms = [] %}
    {% for key in keys %}
        {% set operator = ' <=> ' if null_safe and key | lower not in equal else ' = ' %}
        {% do terms.append(left ~ '.' ~ joinery._quote_identifier(key) ~ operator ~ right ~ '.'
            ~ joinery._quote_identifier(others[loop.index0])) %}
    {% endfor %}
    {{ return(terms | join(' and ')) }}
{% endmacro %}
