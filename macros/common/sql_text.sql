{#- SQL text joinery writes into queries from values it read or was given. -#}

{% macro _sql_string(text) %}
    {#- `text` as a Spark SQL string literal: backslashes and quotes escaped (Spark reads a backslash
        in a literal as an escape), so any path, JSON, name or value round-trips. -#}
    {{ return("'" ~ (text | string | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") }}
{% endmacro %}


{% macro _sql_expression(text) %}
    {#- A user's SQL expression (a port's `when`, `deleted`, `build_where`, ...) as joinery pastes it
        into its SQL, often mid-line: one that ends in a line comment (`amount > 20 -- big orders`)
        would comment out the rest of the statement, so it then ends with a line break. -#}
    {{ return(text ~ '\n' if text is string and '--' in text and not text.endswith('\n') else text) }}
{% endmacro %}


{% macro _watermark_text_sql(expression, type) %}
    {#- `expression` (of `type`) as the text a stored watermark keeps, which a later run, perhaps in
        another session time zone, reads back with _typed_literal. A timestamp carries its UTC offset
        (`2024-02-01 00:00:00.000000+01:00`): `cast(... as string)` writes the wall time of the
        session's zone, and read back in another zone that names another instant (five hours later
        from UTC to New York, so the rows loaded in between were skipped). Other types: their cast. -#}
    {% if type | lower in ['timestamp', 'timestamp_ltz'] %}
        {{ return('date_format(' ~ expression ~ ', ' ~ joinery._sql_string('yyyy-MM-dd HH:mm:ss.SSSSSSXXX') ~ ')') }}
    {% endif %}
    {{ return('cast(' ~ expression ~ ' as string)') }}
{% endmacro %}


{% macro _typed_literal(text, type) %}
    {#- A value Spark rendered as a string (`cast(x as string)`), as a literal of its type again: how
        a watermark read before a run, or a partition value, is written into a query, where a filter
        on a literal reaches the scan. -#}
    {{ return('cast(' ~ joinery._sql_string(text) ~ ' as ' ~ type ~ ')') }}
{% endmacro %}


{% macro _select_item(expression, name) %}
    {#- `expression as name` in a select list, or the expression alone when it is a column reference
        (bare or qualified) of that very name: Spark names it so already, and a self-alias is noise. -#}
    {% set quoted = joinery._quote_identifier(name) %}
    {% set qualifiers = '^(?:(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)\\.)*' %}
    {% if modules.re.match(qualifiers ~ modules.re.escape(quoted) ~ '$', expression) %}
        {{ return(expression) }}
    {% endif %}
    {{ return(expression ~ ' as ' ~ quoted) }}
{% endmacro %}


{% macro _fail_when_sql(condition, message_sql) %}
    {#- A row filter that is true for good rows and stops the query with `message_sql` on a bad one:
        Spark cannot tell which rows a run will read before it reads them. -#}
    {{ return('(case when ' ~ condition ~ ' then raise_error(' ~ message_sql ~ ') else true end)') }}
{% endmacro %}


{% macro _spark_seconds_between(earlier, later) %}
    {#- Seconds from `earlier` to `later`: timestamps as Spark prints them in the session's time zone
        (`2026-11-27 23:45:14.399` or a datetime of it), none when either is missing. -#}
    {% if earlier is none or later is none %}
        {{ return(none) }}
    {% endif %}
    {% set parsed = [] %}
    {% for value in [earlier, later] %}
        {% set text = (value | string).replace('T', ' ') %}
        {% set whole = modules.datetime.datetime.strptime(text[:19], '%Y-%m-%d %H:%M:%S') %}
        {% set fraction = ('0.' ~ text[20:26]) | float if text[19:20] == '.' else 0 %}
        {% do parsed.append(whole.timestamp() + fraction) %}
    {% endfor %}
    {{ return(parsed[1] - parsed[0]) }}
{% endmacro %}
