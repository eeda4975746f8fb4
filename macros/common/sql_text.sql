{#- SQL text joinery writes into queries from values it read or was given. -#}

{% macro sql_string(text) %}
    {#- `text` as a Spark SQL string literal: backslashes and quotes escaped (Spark reads a backslash
        in a literal as an escape), so any path, JSON, name or value round-trips. -#}
    {{ return("'" ~ (text | string | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") }}
{% endmacro %}


{% macro typed_literal(text, type) %}
    {#- A value Spark rendered as a string (`cast(x as string)`), as a literal of its type again: how
        a watermark read before a run, or a partition value, is written into a query, where a filter
        on a literal reaches the scan. -#}
    {{ return('cast(' ~ joinery.sql_string(text) ~ ' as ' ~ type ~ ')') }}
{% endmacro %}
