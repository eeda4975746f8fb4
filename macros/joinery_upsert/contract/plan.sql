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


{% macro _upsert_plan_literal() %}
    {#- The regular expression of the filter _upsert_planned_sql attaches, its one group the JSON of
        the plan as a SQL string holds it (escaped); _upsert_plan_of decodes that group. -#}
    {{ return("\\) as joinery_planned\\nwhere '((?:[^'\\\\]|\\\\.)*)' is not null") }}
{% endmacro %}


{% macro _upsert_plan_of(escaped) %}
    {#- The plan of a literal _upsert_plan_literal found: its escapes undone, its JSON read. -#}
    {{ return(fromjson(modules.re.sub('\\\\(.)', '\\1', escaped))) }}
{% endmacro %}


{% macro _upsert_compiled_plan(sql) %}
    {#- The plan _upsert_planned_sql attached to `sql` (the model's compiled SQL), or none for SQL
        without one (a model whose SELECT no capability planned: the materialization reads what it
        needs itself). -#}
    {% set literal = joinery._upsert_plan_literal() ~ '\\s*' %}
    {% set found = modules.re.search('(?s)^\\s*(?:--[^\\n]*\\n\\s*)*select \\* from \\(\\n.*' ~ literal ~ '$',
        sql or '') %}
    {#- The same SELECT as one CTE of the model, all of it selected (`with compacted as (...) select *
        from compacted`, the examples' style). -#}
    {% set found = found or modules.re.search('(?si)^\\s*(?:--[^\\n]*\\n\\s*)*with\\s+(`?)(\\w+)\\1\\s+as\\s*\\('
        ~ '\\s*select \\* from \\(\\n.*' ~ literal ~ '\\)\\s*select\\s+\\*\\s+from\\s+\\1\\2\\1\\s*$', sql or '') %}
    {% if found is none %}
        {{ return(none) }}
    {% endif %}
    {{ return(joinery._upsert_plan_of(found.groups()[-1])) }}
{% endmacro %}


{% macro _upsert_embedded_plan(sql) %}
    {#- The plan of a planned SELECT that the model's SQL wraps (a CTE, a filter after it), or none.
        The run then learns the SELECT's columns and figures itself, as for SQL without a plan, but
        still owes the plan what its SQL assumed: a MERGE that compares the plan's `versions`. -#}
    {% set found = modules.re.findall(joinery._upsert_plan_literal(), sql or '') %}
    {% if not found %}
        {{ return(none) }}
    {% endif %}
    {{ return(joinery._upsert_plan_of(found[-1])) }}
{% endmacro %}
