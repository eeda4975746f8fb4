{#- Upkeep of every delta and iceberg table the project's joinery_upsert models write, their
    tombstone companions included, in one operation, e.g. daily:
    dbt run-operation joinery.maintain_all --args '{select: [tag:hourly]}'
    Docs: macros/maintenance/maintenance.yml and docs/operations.md, "Upkeep". -#}

{% macro maintain_all(select=none, retain_hours=168, optimize=true, allow_short_retention=false, dry_run=false) %}
    {{ return(adapter.dispatch('maintain_all', 'joinery')(select, retain_hours, optimize, allow_short_retention,
        dry_run)) }}
{% endmacro %}

{% macro default__maintain_all(select, retain_hours, optimize, allow_short_retention, dry_run) %}
    {% set patterns = joinery._maintain_all_patterns(select) %}
    {% do joinery._maintain_check_arguments('maintain_all', retain_hours, optimize, allow_short_retention) %}
    {% if dry_run is not boolean %}
        {{ joinery._raise_argument_error('maintain_all', 'dry_run', dry_run, 'expected true or false') }}
    {% endif %}
    {% set report = [] %}
    {% if not execute %}
        {{ return(report) }}
    {% endif %}
    {% for node in joinery._maintain_all_models(patterns) %}
        {% set table = api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias) %}
        {#- The companion exists only for models with the `tombstones` config (compact sets it). -#}
        {% for relation in [table, joinery.upsert_tombstones_relation(table)] %}
            {% do report.append(joinery._maintain_all_one(node.name, relation, loop.first, retain_hours, optimize,
                allow_short_retention, dry_run)) %}
        {% endfor %}
    {% endfor %}
    {% set done = report | selectattr('maintained') | list | length %}
    {{ log('joinery.maintain_all: ' ~ done ~ (' would be maintained, ' if dry_run else ' maintained, ')
        ~ (report | length - done) ~ ' skipped', info=true) }}
    {{ return(report) }}
{% endmacro %}


{% macro _maintain_all_one(model_name, relation, is_table, retain_hours, optimize, allow_short_retention, dry_run) %}
    {#- One table (or its tombstone companion): maintained when it is a delta or iceberg table, else
        skipped with the reason. Returns and logs what was done. -#}
    {% set existing = adapter.get_relation(database=relation.database, schema=relation.schema,
        identifier=relation.identifier) %}
    {% set table_sql = joinery._maintain_table_sql(joinery._maintain_name_parts(relation)) %}
    {% set provider = joinery._maintain_provider(table_sql) if existing is not none else none %}
    {% if existing is none %}
        {% set action = 'skipped: not built' if is_table else 'skipped: no tombstones' %}
    {% elif provider not in ['delta', 'iceberg'] %}
        {% set action = 'skipped: a view' if provider is none
            else 'skipped: a ' ~ provider ~ ' table deletes its superseded versions itself' %}
    {% elif dry_run %}
        {% set action = 'would be maintained' %}
    {% else %}
        {% do joinery.maintain(relation, retain_hours, optimize, allow_short_retention) %}
        {% set action = ('compacted, ' if optimize else '') ~ 'files of versions older than ' ~ retain_hours
            ~ ' hours removed' %}
    {% endif %}
    {% set entry = {'model': model_name, 'table': table_sql, 'role': 'table' if is_table else 'tombstones',
        'provider': provider, 'action': action, 'maintained': not action.startswith('skipped')} %}
    {{ log('joinery.maintain_all ' ~ table_sql ~ ' (model ' ~ model_name ~ ', ' ~ entry.role ~ ', '
        ~ (provider or 'absent') ~ '): ' ~ action, info=true) }}
    {{ return(entry) }}
{% endmacro %}


{% macro _maintain_all_patterns(select) %}
    {#- `select`: none (every joinery_upsert model), a pattern, or a list of them: a model name, `*`
        matching any characters (`orders_*`), or `tag:<tag>`. Returned as compiled regexes and tags. -#}
    {% set items = [] if select is none else ([select] if select is string else select) %}
    {% if select is not none and (select is mapping or items is not iterable or items | length == 0) %}
        {{ joinery._raise_argument_error('maintain_all', 'select', select, "expected a model name, 'tag:<tag>' "
            ~ "or a name with * wildcards, or a non-empty list of them; omit it for every joinery_upsert model") }}
    {% endif %}
    {% set patterns = [] %}
    {% for item in items %}
        {% if item is not string or not modules.re.match('^(tag:)?[A-Za-z0-9_*]+$', item) %}
            {{ joinery._raise_argument_error('maintain_all', 'select', select, 'each item must be a model name, '
                ~ "'tag:<tag>' or a name with * wildcards (letters, digits, underscores); got "
                ~ tojson(item)) }}
        {% endif %}
        {% if item.startswith('tag:') %}
            {% do patterns.append({'tag': item[4:]}) %}
        {% else %}
            {% do patterns.append({'name': '^' ~ item.replace('*', '.*') ~ '$'}) %}
        {% endif %}
    {% endfor %}
    {{ return(patterns) }}
{% endmacro %}


{% macro _maintain_all_models(patterns) %}
    {#- The project's enabled joinery_upsert models (any package) that one of `patterns` selects
        (all with none), in name order. -#}
    {% set chosen = [] %}
    {% for node in graph.nodes.values() | sort(attribute='name')
            if node.resource_type == 'model' and node.config.materialized == 'joinery_upsert' %}
        {% set hit = namespace(found=patterns | length == 0) %}
        {% for pattern in patterns %}
            {% if (pattern.tag is defined and pattern.tag in node.tags)
                    or (pattern.name is defined and modules.re.match(pattern.name, node.name)) %}
                {% set hit.found = true %}
            {% endif %}
        {% endfor %}
        {% if hit.found %}
            {% do chosen.append(node) %}
        {% endif %}
    {% endfor %}
    {{ return(chosen) }}
{% endmacro %}
