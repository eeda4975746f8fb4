{#- changelog_state over a Delta table's change data feed (`change_feed=true`): the table's changes
    since the version the state's last commit recorded, folded into the state like any changelog,
    with the feed's own order (commit version, then within a commit the row written over a delete). -#}

{% macro _changelog_state_feed_sql(changelog, key, unused_arguments) %}
    {#- `unused_arguments`: {name: value} of the arguments the feed gives itself, which must be unset. -#}
    {% for name, value in unused_arguments | dictsort if value is not none %}
        {{ joinery._raise_argument_error('changelog_state', name, value, 'with change_feed=true the change feed '
            ~ 'gives it (_commit_version, _change_order, _change_type): leave it unset') }}
    {% endfor %}
    {% set columns = joinery._columns_of(changelog) %}
    {% set names = columns | map(attribute='name') | list %}
    {% set key_columns = joinery._column_argument(changelog, joinery.upsert_key_argument(key, 'changelog_state'),
        'key', 'changelog_state', names) %}
    {% if not execute %}
        {{ return('select 1 as joinery_unresolved') }}
    {% endif %}
    {% do joinery._change_feed_check_model('changelog', changelog, names, 'changelog_state') %}
    {% set feed_columns = columns + [api.Column.create('_change_type', 'string'),
        api.Column.create('_commit_version', 'bigint'), api.Column.create('_commit_timestamp', 'timestamp'),
        api.Column.create('_change_order', 'int')] %}
    {% set pinned = joinery._change_feed_pinned([changelog], 'changelog_state') %}
    {% set range = pinned.ranges[changelog.render()] %}
    {% set run = {'mode': 'full' if pinned.mode.full else 'incremental', 'reason': pinned.mode.reason,
        'feeds': pinned.versions, 'built': pinned.mode.built, 'costs': pinned.mode.costs} %}
    {% if not pinned.mode.full %}
        {% set events = joinery.change_feed(changelog, range.from, range.to) %}
        {% if not pinned.changed %}
            {% do run.update({'rows': 0}) %}
        {% endif %}
    {% else %}
        {#- A full build: every row of the table, pinned at its current version, as an insert. -#}
        {% set events = "(select *, 'insert' as _change_type, cast(" ~ range.to
            ~ ' as bigint) as _commit_version, cast(null as timestamp) as _commit_timestamp, 1 as _change_order from '
            ~ changelog ~ ' version as of ' ~ range.to ~ ')' %}
    {% endif %}
    {{ return(joinery._upsert_planned_sql(joinery._changelog_state_sql(events, {
        'names': feed_columns | map(attribute='name') | list,
        'key_columns': key_columns,
        'loaded_at_column': '_commit_version',
        'deleted_sql': "_change_type = 'delete'",
        'ordering': joinery._changelog_state_ordering(feed_columns, ['_commit_version', '_change_order'], none),
        'checks': joinery._changelog_state_row_checks(changelog, key_columns, none, none),
        'on_existing_table': not pinned.mode.full,
        'watermark_sql': none,
    }), run)) }}
{% endmacro %}
