{#- The run plan: what a capability macro (compact) learned while dbt compiled an incremental run of
    a joinery_upsert model, handed to the materialization in the compiled SQL itself. dbt compiles
    a model in another Jinja context than the one its materialization runs in, and the compiled SQL
    is the one thing both see: so the plan rides in it as a literal (docs/DESIGN.md, "The run
    plan"), and a run executes exactly the SQL `dbt compile` shows, sending no statement to learn
    again what the compile already read (the table's last note, the new rows' figures). -#}

{% macro _upsert_planned_sql(sql, plan) %}
    {#- `sql` with `plan` (a mapping of JSON values) attached: a filter on a string literal that is
        never NULL, which Spark drops before it plans the query, so the rows and their cost are
        those of `sql` alone. _upsert_compiled_plan reads it back. -#}
    {% set literal = joinery._sql_string(tojson(plan, sort_keys=true)) %}
    {{ return('select * from (\n' ~ sql ~ '\n) as joinery_planned\nwhere ' ~ literal ~ ' is not null') }}
{% endmacro %}


{% macro _upsert_compiled_plan(sql) %}
    {#- The plan _upsert_planned_sql attached to `sql` (the model's compiled SQL), or none for SQL
        without one (a model whose SELECT no capability planned: the materialization reads what it
        needs itself). -#}
    {% set found = modules.re.search("\\nwhere '((?:[^'\\\\]|\\\\.)*)' is not null\\s*$", sql or '') %}
    {% if found is none %}
        {{ return(none) }}
    {% endif %}
    {{ return(fromjson(modules.re.sub('\\\\(.)', '\\1', found.group(1)))) }}
{% endmacro %}
